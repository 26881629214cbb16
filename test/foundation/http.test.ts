import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MAX_BODY_NESTING, maxBodyBytes } from "../../src/http/body";
import { createHttpApp } from "../../src/http/app";
import { apiKeyGuard } from "../../src/http/auth";
import { insertInbox } from "../../src/inboxes/service";
import { seedOrganization, startTestServer, type TestServer } from "../harness";

let server: TestServer;
// The real envelope with one fixture route, for an API key as /v1's (a route open to anyone reads
// 64 KiB at most), that echoes the size of the body it parsed.
let echo: { stop(closeActiveConnections?: boolean): Promise<unknown> };
let echoUrl: string;
let echoKey: string;
beforeAll(async () => {
  server = await startTestServer();
  echoKey = (await seedOrganization(server.app, "Echo")).apiKey;
  const echoApp = createHttpApp(server.app)
    .use(apiKeyGuard(server.app))
    .post("/echo", ({ body }) => ({ length: JSON.stringify(body ?? null).length }))
    .listen({ port: 0, hostname: "127.0.0.1", maxRequestBodySize: 64 * 1024 * 1024 });
  echo = echoApp;
  echoUrl = `http://127.0.0.1:${echoApp.server!.port}/echo`;
});
afterAll(async () => {
  await echo.stop(true);
  await server.cleanup();
});

const expectCors = (headers: Headers) => {
  expect(headers.get("access-control-allow-origin")).toBe("*");
  expect(headers.get("access-control-allow-credentials")).toBe("true");
};

describe("HTTP envelope", () => {
  test("GET /health answers with the environment and CORS headers", async () => {
    const res = await server.api.get("/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ healthy: true, environment: "test" });
    expectCors(res.headers);
  });

  test("a query parameter given twice is 422 naming it (the last one was read, a bad one before it unchecked)", async () => {
    const { apiKey } = await seedOrganization(server.app, "Repeated");
    for (const query of ["?per=abc&per=2", "?page=1&per=5&page=2"]) {
      const res = await server.api.get(`/v1/inboxes${query}`, apiKey);
      expect({ query, status: res.status }).toEqual({ query, status: 422 });
      expect(res.body.error).toEndWith("a query parameter given more than once");
    }
    expect((await server.api.get("/v1/inboxes?page=1&per=5", apiKey)).status).toBe(200);
  });

  test("unknown path is 404 Not found with CORS", async () => {
    const res = await server.api.get("/no/such/path");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Not found" });
    expectCors(res.headers);
  });

  test("OPTIONS preflight answers 204 with CORS", async () => {
    const res = await fetch(`${server.api.baseUrl}/v1/inboxes`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST" },
    });
    expect(res.status).toBe(204);
    expectCors(res.headers);
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
  });

  test("GET /openapi.json describes the routes", async () => {
    const res = await server.api.get("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toStartWith("3.");
    expect(Object.keys(res.body.paths)).toContain("/health");
  });
});

describe("request bodies", () => {
  const post = (body: string, contentType = "application/json") =>
    fetch(echoUrl, { method: "POST", headers: { "content-type": contentType, authorization: `Bearer ${echoKey}` }, body });

  test("malformed JSON is 400", async () => {
    const res = await post("{not json");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "Malformed JSON body" });
    expectCors(res.headers);
  });

  test("bytes that are not UTF-8 are 400 (RFC 8259 §8.1), not each read as U+FFFD: two Latin-1 passwords were one", async () => {
    for (const bytes of [Buffer.from('{"password":"m\xf6tley"}', "latin1"), Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d])]) {
      const res = await fetch(echoUrl, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${echoKey}` }, body: bytes });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "The body must be UTF-8 (RFC 8259 §8.1)" });
    }
    expect((await post('{"password":"mötley"}')).status).toBe(200);
  });

  test("a string holding NUL (U+0000), in a value or a key, at any depth, is 422; an escaped backslash before u0000 is no NUL", async () => {
    for (const body of ['{"text":"a\\u0000b"}', '{"to":[{"name":"\\u0000"}]}', '{"a\\u0000":1}']) {
      const res = await post(body);
      expect(res.status).toBe(422);
      expect(await res.json()).toEqual({ error: "body: a string must not hold NUL (U+0000)" });
    }
    expect((await post('{"text":"a\\\\u0000b"}')).status).toBe(200);
  });

  test("a lone surrogate, escaped in a value or a key, is 422; a pair (an emoji escaped) is a character", async () => {
    for (const body of ['{"text":"1234567\\ud800"}', '{"text":"\\udfffx"}', '{"to":[{"name":"a\\uDC00\\uD800b"}]}', '{"a\\ud83d":1}']) {
      const res = await post(body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(await res.json()).toEqual({ error: "body: a string must be well-formed Unicode: a surrogate (\\uD800-\\uDFFF) must be one of a pair" });
    }
    expect((await post('{"text":"\\ud83d\\ude00 and \\\\ud800"}')).status).toBe(200);
  });

  test("NUL (%00) in a URL's path or query is 400, before anything else reads it", async () => {
    for (const path of ["/v1/inboxes/inb_%00", "/v1/inboxes?label=%00", "/no/such%00path"]) {
      const res = await fetch(`${server.api.baseUrl}${path}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "The URL must not hold NUL (%00)" });
    }
  });

  test("a coded body (Content-Encoding gzip, or a name unknown) is 415 with Accept-Encoding: identity, never read as plain; identity is plain", async () => {
    const json = JSON.stringify({ a: 1 });
    for (const [coding, body] of [["gzip", Bun.gzipSync(json)], ["x-unknown", json], ["br", json]] as const) {
      const res = await fetch(echoUrl, { method: "POST", headers: { "content-type": "application/json", "content-encoding": coding, authorization: `Bearer ${echoKey}` }, body });
      expect({ coding, status: res.status, accept: res.headers.get("accept-encoding"), body: await res.json() }).toEqual({ coding, status: 415, accept: "identity", body: { error: "Content-Encoding is not supported: send the body uncompressed" } });
    }
    const plain = await fetch(echoUrl, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "Identity", authorization: `Bearer ${echoKey}` }, body: json });
    expect(await plain.json()).toEqual({ length: json.length });
  });

  test("wrong content type is 400", async () => {
    const res = await post("a=b", "application/x-www-form-urlencoded");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("application/json");
  });

  test("a body of exactly the limit passes the size check; one byte more is 413", async () => {
    const json = (size: number) => `"${"a".repeat(size - 2)}"`;
    const atLimit = await post(json(maxBodyBytes));
    expect(atLimit.status).toBe(200);
    expect(((await atLimit.json()) as any).length).toBe(maxBodyBytes);
    const over = await post(json(maxBodyBytes + 1));
    expect(over.status).toBe(413);
    expect(((await over.json()) as any).error).toContain("exceeds");
    expectCors(over.headers);
  });

  test("an oversized chunked upload is refused while streaming", async () => {
    let sent = 0;
    const chunk = new Uint8Array(1024 * 1024).fill(97);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Far more than the limit: the server must answer before we run out.
        if (sent > maxBodyBytes * 3) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(echoUrl, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${echoKey}` }, body: stream });
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(maxBodyBytes * 3);
  });
});

describe("a JSON body nested deeply", () => {
  const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

  test("is 422 past 32 levels of arrays and objects, on every route (it overflowed the schema check's stack: 500), and at 32 goes on to the field's own check", async () => {
    const { organizationId, apiKey } = await seedOrganization(server.app);
    const inbox = await server.app.store.transaction((tx) => insertInbox(server.app, tx, organizationId, { email: "nested@inboxd.test" }));
    const tooDeep = { error: `body: arrays and objects must not nest more than ${MAX_BODY_NESTING} levels deep` };
    const cases: [string, string, (levels: number) => string][] = [
      ["POST", "/v1/webhooks", (levels) => `{"url":"https://hooks.example.com/","events":${nested(levels - 1)}}`],
      ["POST", `/v1/inboxes/${inbox.id}/messages/send`, (levels) => `{"to":["a@example.com"],"labels":${nested(levels - 1)}}`],
      ["POST", "/v1/inboxes", (levels) => `{"unknown":${nested(levels - 1)}}`],
      ["POST", "/auth/login", (levels) => `{"username":${nested(levels - 1)}}`],
    ];
    for (const [method, path, body] of cases) {
      for (const levels of [MAX_BODY_NESTING + 1, 4_500, 20_000]) {
        const res = await server.api.request(method, path, { rawBody: body(levels), token: apiKey, headers: { "content-type": "application/json" } });
        expect({ path, levels, status: res.status, body: res.body }).toEqual({ path, levels, status: 422, body: tooDeep });
      }
      const atTheBound = await server.api.request(method, path, { rawBody: body(MAX_BODY_NESTING), token: apiKey, headers: { "content-type": "application/json" } });
      expect(atTheBound.body).not.toEqual(tooDeep);
      expect(atTheBound.status).toBeLessThan(500);
    }
  });
});

describe("a JSON body that is not an object", () => {
  const notObjects = ['"x"', "[]", "3", "null"];
  // A schema of optional fields (which Elysia would let `{}` through), one of required fields,
  // a rename, and a route outside /v1.
  const routes = (inboxId: string) => [
    ["POST", "/v1/inboxes"],
    ["PATCH", `/v1/inboxes/${inboxId}`],
    ["POST", `/v1/inboxes/${inboxId}/messages/send`],
    ["POST", "/auth/login"],
  ];

  test("is 422 on every route with a body schema, and changes nothing", async () => {
    const { organizationId, apiKey } = await seedOrganization(server.app);
    const inbox = await server.app.store.transaction((tx) => insertInbox(server.app, tx, organizationId, { email: "not-objects@inboxd.test" }));
    const inboxCount = async () => (await server.app.store.inboxes.list(organizationId, 1, 100)).length;
    for (const [method, path] of routes(inbox.id)) {
      for (const rawBody of notObjects) {
        const res = await server.api.request(method!, path!, { rawBody, token: apiKey, headers: { "content-type": "application/json" } });
        expect({ method, path, rawBody, status: res.status, body: res.body }).toEqual({ method, path, rawBody, status: 422, body: { error: "body: must be a JSON object" } });
        expectCors(res.headers);
      }
    }
    expect(await inboxCount()).toBe(1);
    expect(await server.app.store.inboxes.find(organizationId, inbox.id)).toMatchObject({ name: null });
  });

  test("passes to a route without a body schema as it is", async () => {
    for (const rawBody of notObjects) {
      const res = await fetch(echoUrl, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${echoKey}` }, body: rawBody });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ length: rawBody.length });
    }
  });
});
