import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { databaseOf, onPostgres, queryRow, queryRows, seedOrganization, type TestServer } from "../harness";
import { startMessageServer } from "../messages/helpers";

let server: TestServer;
let key: string;
let otherKey: string;
beforeAll(async () => {
  server = await startMessageServer();
  key = (await seedOrganization(server.app)).apiKey;
  otherKey = (await seedOrganization(server.app, "Other org")).apiKey;
});
afterAll(() => server.cleanup());

const create = (body: unknown, token = key) => server.api.post("/v1/inboxes", body, token);
const eventsOf = async (type: string, inboxId: string) =>
  (await queryRows<{ payload: string }>(server.app, "SELECT payload FROM events WHERE type = ? AND inbox_id = ? ORDER BY created_at", type, inboxId)).map((row) => JSON.parse(row.payload));

describe("create", () => {
  test("without fields: a random address on the service domain, no name key, id twice", async () => {
    const res = await create({});
    expect(res.status).toBe(201);
    expect(res.body.email).toMatch(/^[0-9a-f]{20}@inboxd\.test$/);
    expect(res.body).not.toHaveProperty("name");
    expect(res.body._id).toBe(res.body.id);
    expect(Date.parse(res.body.createdAt)).toBeGreaterThan(0);
    expect(await eventsOf("inbox.created", res.body.id)).toEqual([res.body]);
  });

  test("with an empty name: no name key, as PATCH with \"\" leaves it", async () => {
    const res = await create({ name: "" });
    expect(res.status).toBe(201);
    expect(res.body).not.toHaveProperty("name");
  });

  test("with no body at all", async () => {
    const res = await server.api.request("POST", "/v1/inboxes", { token: key });
    expect(res.status).toBe(201);
  });

  test("with a name and an address on the service domain (stored lower-case)", async () => {
    const res = await create({ name: "Support", email: "Support.Team@InboxD.test" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "Support", email: "support.team@inboxd.test" });
  });

  test("an address in use, in any case, is 409", async () => {
    expect((await create({ email: "taken@inboxd.test" })).status).toBe(201);
    const res = await create({ email: "TAKEN@inboxd.test" }, otherKey);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "Email address already in use" });
  });

  test.each([["not-an-address"], ["a@b@inboxd.test"], ["line\r\nbreak@inboxd.test"], ['"quoted local"@inboxd.test'], ['"quoted"@inboxd.test'], ['  "quoted"@inboxd.test'], [""]])("malformed address %j is 422", async (email) => {
    const res = await create({ email });
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith("email:");
  });

  test("an address on a domain that is not the service's (nor verified) is 422", async () => {
    const res = await create({ email: "someone@example.com" });
    expect(res.status).toBe(422);
    expect(res.body.error).toContain("inboxd.test");
  });

  test("a custom domain of the organization takes inboxes once its MX verified; another organization's never", async () => {
    const now = server.clock.now();
    const org = await seedOrganization(server.app);
    const domain = (name: string, receiving: boolean) =>
      server.app.store.domains.insert({ id: `dom_${name}`, organizationId: org.organizationId, name, status: receiving ? "verified" : "pending", receiving, sending: false, recordChecks: {}, verifiedAt: null, recordsChangedAt: now, checkedAt: null, nextCheckAt: now + 3_600_000, createdAt: now, updatedAt: now });
    await domain("mail.example.org", true);
    await domain("pending.example.org", false);
    expect((await create({ email: "Hello@Mail.Example.org" }, org.apiKey)).body.email).toBe("hello@mail.example.org");
    expect((await create({ email: "hello@pending.example.org" }, org.apiKey)).status).toBe(422);
    const res = await create({ email: "other@mail.example.org" }, key);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith("email:");
  });

  test.each([[{ name: 5 }, "name:"], [{ email: ["x"] }, "email:"], [{ name: "x".repeat(257) }, "name:"]])("wrong type %j is 422 naming the field", async (body, field) => {
    const res = await create(body);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith(field);
  });

  test("a name with a line break or a control character is 422, on create and on PATCH; a tab is folding white space", async () => {
    const refused = { error: "name: must not contain line breaks or control characters" };
    for (const name of ["Evil\r\nBcc: victim@example.com", "Bell\u0007", "Del\u007f", "Next\u0085line", "Line\u2028separator"]) expect((await create({ name })).body).toEqual(refused);
    const inbox = (await create({ name: "Sales\tteam" })).body;
    expect(inbox.name).toBe("Sales\tteam");
    const patched = await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: "Sales\nteam" }, key);
    expect({ status: patched.status, body: patched.body }).toEqual({ status: 422, body: refused });
  });

  test.each([['"support"'], ["[]"], ["42"]])("a body that is not an object (%s) is 422", async (rawBody) => {
    const res = await server.api.request("POST", "/v1/inboxes", { token: key, rawBody, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith("body");
  });

  test("no API key is 401", async () => {
    expect((await server.api.post("/v1/inboxes", {})).status).toBe(401);
  });
});

describe("list", () => {
  test("newest first, paginated, only the caller's", async () => {
    const org = await seedOrganization(server.app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await create({ name: `n${i}` }, org.apiKey)).body.id);
      server.clock.advance(1);
    }
    const all = await server.api.get("/v1/inboxes", org.apiKey);
    expect(all.status).toBe(200);
    expect(all.body.map((i: { id: string }) => i.id)).toEqual(ids.reverse());
    const second = await server.api.get("/v1/inboxes?page=2&per=2", org.apiKey);
    expect(second.body.map((i: { id: string }) => i.id)).toEqual([ids[2]]);
  });

  test.each([["per=0"], ["per=101"], ["page=-1"], ["page=0"], ["page=abc"], ["per=1.5"]])("%s is 422", async (query) => {
    const res = await server.api.get(`/v1/inboxes?${query}`, key);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith(`${query.split("=")[0]}: `);
  });
});

describe("get, rename, delete", () => {
  test("get; another organization's inbox and an unknown id are 404 Inbox not found", async () => {
    const inbox = (await create({ name: "Mine" })).body;
    // The get adds the inbox's counts to the inbox as created.
    expect((await server.api.get(`/v1/inboxes/${inbox.id}`, key)).body).toEqual({ ...inbox, messageCount: 0, unreadCount: 0 });
    for (const [path, token] of [[`/v1/inboxes/${inbox.id}`, otherKey], ["/v1/inboxes/inb_unknown", key]] as const) {
      const res = await server.api.get(path, token);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "Inbox not found" });
    }
  });

  test("PATCH renames, moves updatedAt, emits inbox.updated; null removes the name", async () => {
    const inbox = (await create({ name: "Before" })).body;
    server.clock.advance(1000);
    const renamed = await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: "After" }, key);
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: inbox.id, name: "After", email: inbox.email, createdAt: inbox.createdAt });
    expect(renamed.body.updatedAt).not.toBe(inbox.updatedAt);
    expect(await eventsOf("inbox.updated", inbox.id)).toEqual([renamed.body]);
    const cleared = await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: null }, key);
    expect(cleared.body).not.toHaveProperty("name");
  });

  test("PATCH: wrong type 422, another organization's 404", async () => {
    const inbox = (await create({})).body;
    expect((await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: 42 }, key)).status).toBe(422);
    expect((await server.api.patch(`/v1/inboxes/${inbox.id}`, "x", key)).body).toEqual({ error: "body: must be a JSON object" });
    const res = await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: "x" }, otherKey);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Inbox not found" });
  });

  test("DELETE returns the inbox as it was, removes its threads and messages, emits inbox.deleted", async () => {
    const inbox = (await create({ name: "Doomed" })).body;
    const sent = await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, { to: ["someone@example.com"], subject: "s", text: "t", html: "<p>t</p>" }, key);
    expect(sent.status).toBe(201);
    expect((await server.api.delete(`/v1/inboxes/${inbox.id}`, otherKey)).status).toBe(404);

    const res = await server.api.delete(`/v1/inboxes/${inbox.id}`, key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(inbox);
    expect(await eventsOf("inbox.deleted", inbox.id)).toEqual([inbox]);
    expect((await server.api.get(`/v1/inboxes/${inbox.id}`, key)).status).toBe(404);
    const count = async (from: string, id: string) => (await queryRow<{ n: number }>(server.app, `SELECT count(*) AS n FROM ${from}`, id))!.n;
    expect(await count("threads WHERE inbox_id = ?", inbox.id)).toBe(0);
    expect(await count("messages WHERE inbox_id = ?", inbox.id)).toBe(0);
    expect(await count("message_sources WHERE message_id = ?", sent.body.id)).toBe(0);
    expect(await count("deliveries WHERE message_id = ?", sent.body.id)).toBe(0);
    // The search index follows the cascade (its delete trigger ran); PostgreSQL's indexes are on messages itself.
    if (!onPostgres) expect(databaseOf(server.app).query("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?").all(`"${inbox.email}"`)).toEqual([]);
    expect((await server.api.delete(`/v1/inboxes/${inbox.id}`, key)).body).toEqual({ error: "Inbox not found" });
  });
});
