import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { pinnedPost, RESPONSE_BODY_LIMIT, type PinnedPost } from "../../src/webhooks/pinned-fetch";
import { selfSignedCert } from "../peers/tls";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";

// Names under .invalid never resolve (RFC 6761): a request that reaches the
// server proves that no DNS look-up took place.
const HOOK_HOST = "hooks.invalid";
const hookCert = selfSignedCert(HOOK_HOST);

const post = (url: string, overrides: Partial<PinnedPost> = {}) =>
  pinnedPost({
    url: new URL(url),
    address: "127.0.0.1",
    headers: { "content-type": "application/json", "user-agent": "Service-Webhook/1.0" },
    body: '{"event":"test"}',
    timeoutMs: 2000,
    ...overrides,
  });

describe("pinnedPost over http", () => {
  let receiver: WebhookReceiver;
  beforeAll(() => {
    receiver = startWebhookReceiver();
  });
  afterAll(() => receiver.close());

  test("connects to the given address and names the URL's host", async () => {
    receiver.respond("/hook", { status: 202, body: "accepted" });
    const before = receiver.requests.length;
    const result = await post(`http://${HOOK_HOST}:${receiver.port}/hook?x=1`);
    expect(result).toEqual({ status: 202, body: "accepted" });
    const request = receiver.requests[before];
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/hook?x=1");
    expect(request.headers.host).toBe(`${HOOK_HOST}:${receiver.port}`);
    expect(request.headers["user-agent"]).toBe("Service-Webhook/1.0");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.body).toBe('{"event":"test"}');
  });

  test("a Host header from the caller cannot override the URL's host", async () => {
    const before = receiver.requests.length;
    await post(`http://${HOOK_HOST}:${receiver.port}/hook`, { headers: { Host: "metadata.internal" } });
    expect(receiver.requests[before].headers.host).toBe(`${HOOK_HOST}:${receiver.port}`);
  });

  test("returns a redirect as it is, without following it", async () => {
    receiver.respond("/moved", { redirect: receiver.url("/elsewhere") });
    const before = receiver.requests.length;
    const result = await post(`http://${HOOK_HOST}:${receiver.port}/moved`);
    expect(result.status).toBe(302);
    expect(result.error).toBeUndefined();
    await Bun.sleep(50);
    expect(receiver.requests.slice(before).map((request) => request.path)).toEqual(["/moved"]);
  });

  test("returns an error status with its body", async () => {
    receiver.respond("/broken", { status: 500, body: "internal error" });
    expect(await post(`http://${HOOK_HOST}:${receiver.port}/broken`)).toEqual({ status: 500, body: "internal error" });
  });

  test("leaves NUL (U+0000) out of the body it keeps: PostgreSQL's text cannot hold it, and recording the try failed every turn of the queue", async () => {
    receiver.respond("/nul", { body: "bad\u0000body\u0000" });
    expect(await post(`http://${HOOK_HOST}:${receiver.port}/nul`)).toEqual({ status: 200, body: "badbody" });
  });

  test("keeps only the first 4 kB of a large body", async () => {
    receiver.respond("/large", { body: "y".repeat(100_000) });
    const result = await post(`http://${HOOK_HOST}:${receiver.port}/large`);
    expect(result.status).toBe(200);
    expect(result.body).toBe("y".repeat(RESPONSE_BODY_LIMIT));
  });

  test("gives up when no answer comes in time", async () => {
    receiver.respond("/slow", { delayMs: 3000 });
    const started = performance.now();
    const result = await post(`http://${HOOK_HOST}:${receiver.port}/slow`, { timeoutMs: 300 });
    expect(performance.now() - started).toBeLessThan(1500);
    expect(result).toEqual({ status: 0, body: "", error: "no answer within 300 ms" });
  });

  test("reuses one connection for several posts to the same receiver", async () => {
    let connections = 0;
    // node:http rather than Bun.serve: it tells when a new connection arrives.
    const counting = createHttpServer((_request, response) => response.end("ok"));
    counting.on("connection", () => connections++);
    await new Promise<void>((resolve) => counting.listen(0, "127.0.0.1", resolve));
    const port = (counting.address() as AddressInfo).port;
    try {
      for (let i = 0; i < 3; i++) expect((await post(`http://${HOOK_HOST}:${port}/hook`)).status).toBe(200);
      expect(connections).toBe(1);
    } finally {
      counting.closeAllConnections();
      counting.close();
    }
  });

  test("reports a refused connection", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const port = closed.port;
    await closed.stop(true);
    const result = await post(`http://${HOOK_HOST}:${port}/hook`);
    expect(result.status).toBe(0);
    expect(result.error).toContain("ECONNREFUSED");
  });
});

describe("pinnedPost with endless or trickling bodies", () => {
  let server: ReturnType<typeof Bun.serve>;
  beforeAll(() => {
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        // A small compressed body (its Content-Length far below the limit) that inflates past it.
        if (new URL(request.url).pathname === "/compressed") return new Response(Bun.gzipSync("z".repeat(100_000)), { headers: { "content-encoding": "gzip" } });
        const trickle = new URL(request.url).pathname === "/trickle";
        const chunk = new Uint8Array(trickle ? 10 : 65_536).fill(122);
        const body = new ReadableStream({
          async pull(controller) {
            controller.enqueue(chunk);
            if (trickle) await Bun.sleep(100);
          },
        });
        return new Response(body);
      },
    });
  });
  afterAll(() => server.stop(true));

  test("stops reading an endless body at 4 kB", async () => {
    const result = await post(`http://${HOOK_HOST}:${server.port}/endless`);
    expect(result).toEqual({ status: 200, body: "z".repeat(RESPONSE_BODY_LIMIT) });
  });

  test("stops reading a compressed body at 4 kB of what it inflates to", async () => {
    const result = await post(`http://${HOOK_HOST}:${server.port}/compressed`);
    expect(result).toEqual({ status: 200, body: "z".repeat(RESPONSE_BODY_LIMIT) });
  });

  test("keeps the status and what arrived of a body cut off by the deadline", async () => {
    const started = performance.now();
    const result = await post(`http://${HOOK_HOST}:${server.port}/trickle`, { timeoutMs: 500 });
    expect(performance.now() - started).toBeLessThan(1500);
    expect(result.status).toBe(200);
    expect(result.error).toBeUndefined();
    expect(result.body.length).toBeGreaterThan(0);
    expect(result.body.length).toBeLessThan(RESPONSE_BODY_LIMIT);
  });
});

describe("pinnedPost over https", () => {
  let server: Server;
  let port: number;
  const seen: { servername: string | false | null; host?: string }[] = [];
  beforeAll(async () => {
    // node:https rather than Bun.serve: it tells which SNI name the client sent.
    server = createServer({ cert: hookCert.cert, key: hookCert.key }, (request, response) => {
      seen.push({ servername: (request.socket as TLSSocket).servername, host: request.headers.host });
      response.end("secure ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  test("sends SNI and Host for the URL's host and verifies the certificate against it", async () => {
    const result = await post(`https://${HOOK_HOST}:${port}/hook`, { trustedCa: hookCert.cert });
    expect(result).toEqual({ status: 200, body: "secure ok" });
    expect(seen.at(-1)).toEqual({ servername: HOOK_HOST, host: `${HOOK_HOST}:${port}` });
  });

  test("refuses a certificate for another name, even right after a pooled connection to the same address", async () => {
    expect((await post(`https://${HOOK_HOST}:${port}/hook`, { trustedCa: hookCert.cert })).status).toBe(200);
    const result = await post(`https://other.invalid:${port}/hook`, { trustedCa: hookCert.cert });
    expect(result.status).toBe(0);
    expect(result.error).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
  });

  test("refuses a certificate no trusted CA signed (production has no trustedCa)", async () => {
    const result = await post(`https://${HOOK_HOST}:${port}/hook`);
    expect(result.status).toBe(0);
    expect(result.error).toMatch(/SELF_SIGNED|self.signed/i);
  });

  test("refuses a certificate that another CA signed, even for the right name", async () => {
    const result = await post(`https://${HOOK_HOST}:${port}/hook`, { trustedCa: selfSignedCert(HOOK_HOST).cert });
    expect(result.status).toBe(0);
    expect(result.error).toBeDefined();
  });
});

describe("pinnedPost to an IPv6 address", () => {
  test("brackets the address and keeps the host name", async () => {
    const hosts: (string | null)[] = [];
    const server = Bun.serve({
      hostname: "::1",
      port: 0,
      fetch(request) {
        hosts.push(request.headers.get("host"));
        return new Response("v6");
      },
    });
    try {
      const result = await post(`http://${HOOK_HOST}:${server.port}/hook`, { address: "::1" });
      expect(result).toEqual({ status: 200, body: "v6" });
      expect(hosts).toEqual([`${HOOK_HOST}:${server.port}`]);
    } finally {
      await server.stop(true);
    }
  });
});
