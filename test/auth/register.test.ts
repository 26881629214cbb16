import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sha256Hex } from "../../src/ids";
import { databaseOf, onPostgres, queryRow, queryRows, register, sqliteOnly, startTestServer, testPassword, type TestServer } from "../harness";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.cleanup());

const valid = () => ({ firstName: "Ada", lastName: "Lovelace", username: `ada-${crypto.randomUUID()}@example.com`, password: testPassword });
const count = async (table: string) => (await queryRow<{ n: number }>(server.app, `SELECT count(*) AS n FROM ${table}`))!.n;
const accountTables = ["users", "organizations", "memberships", "api_keys", "access_tokens", "inboxes", "events"];
const counts = async () => Object.fromEntries(await Promise.all(accountTables.map(async (t) => [t, await count(t)])));

describe("POST /auth/register", () => {
  test("creates user, organization, API key, token and inbox, with the documented shapes", async () => {
    const input = { ...valid(), username: "Ada.Mixed@Example.COM" };
    const res = await server.api.post("/auth/register", input);
    expect(res.status).toBe(201);
    const { user, token, organization, apiKey, inbox } = res.body;
    expect(Object.keys(res.body).sort()).toEqual(["apiKey", "inbox", "organization", "token", "user"]);

    expect(user).toEqual({ id: user.id, _id: user.id, email: "ada.mixed@example.com", firstName: "Ada", lastName: "Lovelace", organizations: [organization.id] });
    expect(organization).toEqual({ id: organization.id, _id: organization.id, name: "Ada's organization", createdAt: expect.any(String), updatedAt: expect.any(String) });
    expect(new Date(organization.createdAt).toISOString()).toBe(organization.createdAt);

    expect(apiKey).toEqual({ id: apiKey.id, _id: apiKey.id, organizationId: organization.id, name: "Default", prefix: apiKey.key.slice(0, 11), createdAt: organization.createdAt, key: apiKey.key });
    expect(apiKey.key).toMatch(/^ik_[0-9a-f]{32}$/);
    expect(token).toMatch(/^at_[0-9a-f]{64}$/);

    expect(inbox.organizationId).toBe(organization.id);
    expect(inbox.id).toBe(inbox._id);
    expect(inbox.email).toMatch(/^[0-9a-f]{20}@inboxd\.test$/);
    expect(inbox).not.toHaveProperty("name");

    // Both credentials work where they belong.
    expect((await server.api.get(`/organizations/${organization.id}/api_keys`, token)).status).toBe(200);
    expect((await server.api.get("/v1/api_keys", apiKey.key)).status).toBe(200);
  });

  test("stores only hashes: SHA-256 of the token and key, argon2id of the password", async () => {
    const input = valid();
    const { user, token, apiKey } = await register(server.api, input);
    const passwordHash = (await queryRow<{ h: string }>(server.app, "SELECT password_hash AS h FROM users WHERE id = ?", user.id))!.h;
    expect(passwordHash).toStartWith("$argon2id$v=19$m=19456,t=2,p=1$");
    expect(passwordHash).not.toContain(input.password);
    expect(await Bun.password.verify(input.password, passwordHash)).toBe(true);
    expect(await queryRow(server.app, "SELECT 1 FROM access_tokens WHERE token_hash = ?", sha256Hex(token))).toBeDefined();
    expect(await queryRow(server.app, "SELECT 1 FROM api_keys WHERE key_hash = ?", sha256Hex(apiKey.key))).toBeDefined();
    const dump = JSON.stringify(await queryRows(server.app, "SELECT * FROM access_tokens")) + JSON.stringify(await queryRows(server.app, "SELECT * FROM api_keys"));
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(apiKey.key);
  });

  test("emits inbox.created for the initial inbox, in the same commit", async () => {
    const { inbox } = await register(server.api);
    const event = (await queryRow<{ type: string; payload: string }>(server.app, "SELECT type, payload FROM events WHERE inbox_id = ?", inbox.id))!;
    expect(event.type).toBe("inbox.created");
    expect(JSON.parse(event.payload)).toEqual(inbox);
  });

  test("accepts the aliases first_name, last_name and email", async () => {
    const email = `alias-${crypto.randomUUID()}@example.com`;
    const res = await server.api.post("/auth/register", { first_name: "Grace", last_name: "Hopper", email, password: testPassword });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ firstName: "Grace", lastName: "Hopper", email });
  });

  test("a taken email is 409, compared case-insensitively, and creates nothing", async () => {
    const input = valid();
    await register(server.api, input);
    const before = await counts();
    for (const username of [input.username, input.username.toUpperCase()]) {
      const res = await server.api.post("/auth/register", { ...input, username });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: "Email already registered" });
    }
    expect(await counts()).toEqual(before);
  });

  test("two concurrent registrations of one email: one 201, one 409", async () => {
    const input = valid();
    const statuses = (await Promise.all([server.api.post("/auth/register", input), server.api.post("/auth/register", input)])).map((r) => r.status);
    expect(statuses.sort()).toEqual([201, 409]);
  });

  test("a password of exactly 8 and of exactly 1024 characters is accepted", async () => {
    expect((await server.api.post("/auth/register", { ...valid(), password: "12345678" })).status).toBe(201);
    expect((await server.api.post("/auth/register", { ...valid(), password: "p".repeat(1024) })).status).toBe(201);
    // Code points, as the minimum: 1,024 emoji are 2,048 UTF-16 units; one more is over.
    expect((await server.api.post("/auth/register", { ...valid(), password: "😀".repeat(1024) })).status).toBe(201);
    expect((await server.api.post("/auth/register", { ...valid(), password: "😀".repeat(1025) })).body).toEqual({ error: "password: must be at most 1024 characters" });
  });

  // Each row: what is wrong, the body change, and the field the 422 must name.
  const badInput: [string, Record<string, unknown>, string][] = [
    ["missing firstName", { firstName: undefined }, "firstName: is required"],
    ["missing lastName", { lastName: undefined }, "lastName: is required"],
    ["missing username", { username: undefined }, "username: is required"],
    ["missing password", { password: undefined }, "password: is required"],
    ["firstName not a string", { firstName: 42 }, "firstName: Expected string"],
    ["username not a string", { username: ["a@example.com"] }, "username: Expected string"],
    ["password not a string", { password: 12345678 }, "password: Expected string"],
    ["alias of the wrong type", { email: true, username: undefined }, "email: Expected string"],
    ["empty firstName", { firstName: "" }, "firstName: must not be empty"],
    ["blank lastName", { lastName: "   " }, "lastName: must not be empty"],
    ["empty username", { username: "" }, "username: must not be empty"],
    ["empty password", { password: "" }, "password: must not be empty"],
    ["username without @", { username: "not-an-email" }, "username: must be an email address"],
    ["username without domain", { username: "ada@" }, "username: must be an email address"],
    ["username without local part", { username: "@example.com" }, "username: must be an email address"],
    ["username with a space", { username: "ada lovelace@example.com" }, "username: must be an email address"],
    ["username with a display name", { username: "Ada <ada@example.com>" }, "username: must be an email address"],
    ["username with a line break", { username: "ada@example.com\r\nBcc: x@y.z" }, "username: must be an email address"],
    ["password of 7 characters", { password: "1234567" }, "password: must be at least 8 characters"],
    ["password of 4 emoji (8 UTF-16 units)", { password: "🔑🔑🔑🔑" }, "password: must be at least 8 characters"],
    ["password of 10 kB", { password: "x".repeat(10_240) }, "password: must be at most 1024 characters"],
    ["firstName of 201 characters", { firstName: "a".repeat(201) }, "firstName: must be at most 200 characters"],
    ["firstName with a line break", { firstName: "Ada\r\nBcc: x@y.z" }, "firstName: must not contain line breaks or control characters"],
    ["lastName with a control character", { lastName: "Love\u0001lace" }, "lastName: must not contain line breaks or control characters"],
  ];
  test.each(badInput)("%s is 422 naming the field, and creates nothing", async (_, change, error) => {
    const before = await counts();
    const res = await server.api.post("/auth/register", { ...valid(), ...change });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error });
    expect(await counts()).toEqual(before);
  });

  test("no body is 422; malformed JSON and a wrong content type are 400", async () => {
    const none = await server.api.post("/auth/register");
    expect(none.status).toBe(422);
    expect(none.body).toEqual({ error: "body: Expected object" });
    const malformed = await server.api.request("POST", "/auth/register", { rawBody: "{\"firstName\":", headers: { "content-type": "application/json" } });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ error: "Malformed JSON body" });
    const form = await server.api.request("POST", "/auth/register", { rawBody: "firstName=Ada", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(form.status).toBe(400);
  });

  test.skipIf(onPostgres)(sqliteOnly("a failure late in the transaction leaves no user, organization, key or token behind", "the failure is a SQLite trigger (test/store/postgres-engine.test.ts rolls transactions back)"), async () => {
    const db = databaseOf(server.app);
    // A real failure at the last step (the inbox insert), raised by SQLite itself.
    db.exec("CREATE TRIGGER fail_inbox BEFORE INSERT ON inboxes BEGIN SELECT RAISE(ABORT, 'simulated failure'); END");
    const input = valid();
    const before = await counts();
    try {
      const res = await server.api.post("/auth/register", input);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: "Internal server error" });
      expect(await counts()).toEqual(before);
    } finally {
      db.exec("DROP TRIGGER fail_inbox");
    }
    expect((await server.api.post("/auth/register", input)).status).toBe(201);
  });
});
