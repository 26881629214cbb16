import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { createInbox, validSend } from "./helpers";

const limit = 3;
let server: TestServer;
let dns: DnsServer;
let env: Record<string, string>;
let key: string;
let inbox: { id: string };
beforeAll(async () => {
  // Remote deliveries meet an empty loopback DNS zone: no look-up leaves the machine.
  dns = await startDnsServer();
  env = { INBOXD_SEND_LIMIT: String(limit), INBOXD_DNS_SERVERS: dns.address };
  server = await startTestServer({ env });
  // Start at the beginning of an hour, so the steps below stay inside one window.
  const now = server.clock.now();
  server.clock.advance(3_600_000 - (now % 3_600_000) + 1000);
  key = (await seedOrganization(server.app)).apiKey;
  inbox = await createInbox(server, key);
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
});

const send = (body: unknown = validSend(), token = key) => server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, body, token);
const rateLimit = (headers: Headers) =>
  Object.fromEntries(["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "ratelimit-policy", "retry-after"].map((h) => [h, headers.get(h)]));

describe("send rate limit", () => {
  test("the limit-th send passes, the next is 429 with headers; validation failures count nothing; a restart keeps the count; a new window resets it", async () => {
    const first = await send();
    expect(first.status).toBe(201);
    // Reset: seconds to the end of the hour the clock was moved to (less whatever real time has passed).
    const { "ratelimit-reset": firstReset, ...firstHeaders } = rateLimit(first.headers);
    expect(firstHeaders).toEqual({ "ratelimit-limit": "3", "ratelimit-remaining": "2", "ratelimit-policy": "3;w=3600", "retry-after": null });
    expect(Number(firstReset)).toBeWithin(3590, 3600);

    // Refused by validation or 404: the budget is untouched.
    expect((await send(validSend({ to: [] }))).status).toBe(422);
    expect((await send(validSend({ attachments: [{ content: "!!" }] }))).status).toBe(422);
    expect((await server.api.post("/v1/inboxes/inb_unknown/messages/send", validSend(), key)).status).toBe(404);

    // A reply counts like a send.
    const replied = await server.api.post(`/v1/inboxes/${inbox.id}/messages/${first.body.id}/reply`, { text: "r", html: "r" }, key);
    expect(replied.status).toBe(201);
    expect(replied.headers.get("ratelimit-remaining")).toBe("1");

    // The count lives in the database: a restart on the same data dir keeps it.
    const clockOffset = server.clock.now() - Date.now();
    await server.stop();
    server = await startTestServer({ dataDir: server.dataDir, env });
    server.clock.advance(clockOffset);

    const third = await send();
    expect(third.status).toBe(201);
    expect(third.headers.get("ratelimit-remaining")).toBe("0");

    server.clock.advance(60_000);
    const refused = await send();
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: "Too many requests, please try again later." });
    const headers = rateLimit(refused.headers);
    expect(headers).toMatchObject({ "ratelimit-limit": "3", "ratelimit-remaining": "0", "ratelimit-policy": "3;w=3600" });
    expect(Number(headers["ratelimit-reset"])).toBeWithin(3530, 3541);
    expect(headers["retry-after"]).toBe(headers["ratelimit-reset"]);
    // CORS clients may read them.
    expect(refused.headers.get("access-control-expose-headers")?.toLowerCase()).toContain("ratelimit-remaining");
    const replyRefused = await server.api.post(`/v1/inboxes/${inbox.id}/messages/${first.body.id}/reply`, { text: "r", html: "r" }, key);
    expect(replyRefused.status).toBe(429);

    // Another organization has its own budget.
    const other = await seedOrganization(server.app);
    const otherInbox = await createInbox(server, other.apiKey);
    expect((await server.api.post(`/v1/inboxes/${otherInbox.id}/messages/send`, validSend(), other.apiKey)).status).toBe(201);

    // The next hourly window starts afresh.
    server.clock.advance(Number(headers["ratelimit-reset"]) * 1000);
    const next = await send();
    expect(next.status).toBe(201);
    expect(next.headers.get("ratelimit-remaining")).toBe("2");
    expect(Number(next.headers.get("ratelimit-reset"))).toBeWithin(3590, 3601);
  });

  test("concurrent sends never go past the limit", async () => {
    server.clock.advance(3_600_000);
    const results = await Promise.all(Array.from({ length: 10 }, () => send()));
    expect(results.filter((r) => r.status === 201)).toHaveLength(limit);
    expect(results.filter((r) => r.status === 429)).toHaveLength(10 - limit);
  });
});
