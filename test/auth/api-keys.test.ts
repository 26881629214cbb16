import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { eventually, register, startTestServer, type Registered, type TestServer } from "../harness";

let server: TestServer;
let owner: Registered;
let stranger: Registered;
beforeAll(async () => {
  server = await startTestServer();
  [owner, stranger] = await Promise.all([register(server.api), register(server.api)]);
});
afterAll(() => server.cleanup());

// The same management, under two route families with their own credential kind.
const families = [
  { family: "/organizations/{id}/api_keys (access token)", base: () => `/organizations/${owner.organization.id}/api_keys`, credential: () => owner.token },
  { family: "/v1/api_keys (API key)", base: () => "/v1/api_keys", credential: () => owner.apiKey.key },
];

describe.each(families)("$family", ({ base, credential }) => {
  const create = (body: unknown) => server.api.post(base(), body, credential());
  const list = (query = "") => server.api.get(base() + query, credential());

  test("create: 201 with the key shown once, a recognisable prefix, no lastUsedAt", async () => {
    const res = await create({ name: "  ci deploy  " });
    expect(res.status).toBe(201);
    const key = res.body;
    expect(key).toEqual({ id: key.id, _id: key.id, organizationId: owner.organization.id, name: "ci deploy", prefix: key.key.slice(0, 11), createdAt: expect.any(String), key: key.key });
    expect(key.key).toMatch(/^ik_[0-9a-f]{32}$/);
    // The new key works on /v1 and acts for the same organization.
    const own = await server.api.get(`/v1/api_keys/${key.id}`, key.key);
    expect(own.status).toBe(200);
    expect(own.body.organizationId).toBe(owner.organization.id);
  });

  test("list: newest first, never a key value; get: the record without the key", async () => {
    const created = (await create({ name: "newest" })).body;
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body[0].id).toBe(created.id);
    expect(res.body.map((k: { createdAt: string }) => k.createdAt)).toEqual(res.body.map((k: { createdAt: string }) => k.createdAt).sort().reverse());
    for (const key of res.body) {
      expect(key).not.toHaveProperty("key");
      expect(key).not.toHaveProperty("keyHash");
      expect(key.organizationId).toBe(owner.organization.id);
    }
    const one = await server.api.get(`${base()}/${created.id}`, credential());
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ id: created.id, _id: created.id, organizationId: owner.organization.id, name: "newest", prefix: created.prefix, createdAt: created.createdAt });
  });

  test("page and per: default 20, slices in order, out-of-range values 422 naming the field", async () => {
    const all = (await list("?per=100")).body as { id: string }[];
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect((await list("?per=2")).body.map((k: { id: string }) => k.id)).toEqual(all.slice(0, 2).map((k) => k.id));
    expect((await list("?per=2&page=2")).body.map((k: { id: string }) => k.id)).toEqual(all.slice(2, 4).map((k) => k.id));
    expect((await list("?page=1000")).body).toEqual([]);
    for (const [query, error] of [
      ["?per=0", "per: must be a whole number from 1 to 100"],
      ["?per=101", "per: must be a whole number from 1 to 100"],
      ["?per=abc", "per: must be a whole number from 1 to 100"],
      ["?per=1.5", "per: must be a whole number from 1 to 100"],
      ["?page=0", "page: must be a whole number from 1 to 999999999"],
      ["?page=-1", "page: must be a whole number from 1 to 999999999"],
    ]) {
      const res = await list(query);
      expect({ query, status: res.status, body: res.body }).toEqual({ query, status: 422, body: { error } });
    }
  });

  test("delete: 200 with the deleted record; the very next request with that key is 401", async () => {
    const doomed = (await create({ name: "doomed" })).body;
    expect((await server.api.get("/v1/api_keys", doomed.key)).status).toBe(200);
    const res = await server.api.delete(`${base()}/${doomed.id}`, credential());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: doomed.id, _id: doomed.id, name: "doomed", prefix: doomed.prefix });
    expect(res.body).not.toHaveProperty("key");
    const revoked = await server.api.get("/v1/api_keys", doomed.key);
    expect(revoked.status).toBe(401);
    expect(revoked.body).toEqual({ error: "Invalid API key" });
    expect((await server.api.get(`${base()}/${doomed.id}`, credential())).status).toBe(404);
    expect((await server.api.delete(`${base()}/${doomed.id}`, credential())).status).toBe(404);
  });

  test("an unknown key id or one of another organization is 404", async () => {
    for (const id of ["key_000000000000000000000000", stranger.apiKey.id]) {
      for (const res of [await server.api.get(`${base()}/${id}`, credential()), await server.api.delete(`${base()}/${id}`, credential())]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: "API key not found" });
      }
    }
    // The other organization's key survived the delete attempts.
    expect((await server.api.get("/v1/api_keys", stranger.apiKey.key)).status).toBe(200);
  });

  const badNames: [string, unknown, string][] = [
    ["missing name", {}, "name: Expected string"],
    ["name not a string", { name: 7 }, "name: Expected string"],
    ["empty name", { name: "" }, "name: must not be empty"],
    ["blank name", { name: "   " }, "name: must not be empty"],
    ["name of 101 characters", { name: "n".repeat(101) }, "name: must be at most 100 characters"],
    ["name with a line break", { name: "ci\nprod" }, "name: must not contain line breaks or control characters"],
    ["no body", undefined, "body: Expected object"],
  ];
  test.each(badNames)("create with %s is 422", async (_, body, error) => {
    const res = await create(body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error });
  });
});

describe("lastUsedAt", () => {
  const record = async (id: string) => (await server.api.get(`/organizations/${owner.organization.id}/api_keys/${id}`, owner.token)).body;

  test("is set on first use and refreshed at most once a minute", async () => {
    const key = (await server.api.post(`/organizations/${owner.organization.id}/api_keys`, { name: "usage" }, owner.token)).body;
    expect(await record(key.id)).not.toHaveProperty("lastUsedAt");
    const firstUse = server.clock.now();
    await server.api.get("/v1/api_keys?per=1", key.key);
    const first = (await record(key.id)).lastUsedAt;
    expect(Date.parse(first)).toBeGreaterThanOrEqual(firstUse);
    server.clock.advance(30_000);
    await server.api.get("/v1/api_keys?per=1", key.key);
    expect((await record(key.id)).lastUsedAt).toBe(first);
    server.clock.advance(30_000);
    await server.api.get("/v1/api_keys?per=1", key.key);
    expect(Date.parse((await record(key.id)).lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(first) + 60_000);
  });
});

describe("/v1/api_keys with the caller's own key", () => {
  test("a key may delete itself; its next request is 401 while the other keys keep working", async () => {
    const self = (await server.api.post("/v1/api_keys", { name: "self" }, owner.apiKey.key)).body;
    const res = await server.api.delete(`/v1/api_keys/${self.id}`, self.key);
    expect(res.status).toBe(200);
    expect((await server.api.get("/v1/api_keys", self.key)).status).toBe(401);
    expect((await server.api.get("/v1/api_keys", owner.apiKey.key)).status).toBe(200);
  });
});

describe("a request under way when its key is revoked", () => {
  test("a send whose body was still arriving is 401 once it is in, and nothing is sent", async () => {
    const key = (await server.api.post("/v1/api_keys", { name: "uploading" }, owner.apiKey.key)).body;
    const body = Buffer.from(JSON.stringify({ to: ["far@example.net"], subject: "Sent after the revocation?", text: "x", html: "", attachments: [{ name: "big.bin", content: Buffer.alloc(600_000, 1).toString("base64") }] }));
    const half = body.length >> 1;
    const socket = connect(server.httpPort, "127.0.0.1");
    let answer = "";
    socket.setEncoding("latin1").on("data", (chunk: string) => (answer += chunk));
    socket.write(
      `POST /v1/inboxes/${owner.inbox.id}/messages/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    socket.write(body.subarray(0, half));
    // The key was found and the body's memory reserved before the rest of the body is read.
    await eventually("the upload's memory reserved", async () => server.app.messageMemory.inUse(), (bytes) => bytes > 0);
    expect((await server.api.delete(`/v1/api_keys/${key.id}`, owner.apiKey.key)).status).toBe(200);
    socket.write(body.subarray(half));
    await eventually("the answer", async () => answer, (text) => text.includes("\r\n\r\n{"));
    socket.destroy();
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
    expect(answer).toContain('"error":"Invalid API key"');
    const sent = (await server.api.get(`/v1/inboxes/${owner.inbox.id}/messages?per=100`, owner.apiKey.key)).body as { subject: string }[];
    expect(sent.map((message) => message.subject)).not.toContain("Sent after the revocation?");
  });
});
