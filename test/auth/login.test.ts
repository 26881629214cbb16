import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dummyHash, hashPassword, verifyAgainstDummy } from "../../src/auth/passwords";
import { sha256Hex } from "../../src/ids";
import { queryRow, register, type Registered, startTestServer, testPassword, type TestServer } from "../harness";

let server: TestServer;
let ada: Registered;
beforeAll(async () => {
  // The brute-force limit has its own file; here it must not interfere with repeated failures.
  server = await startTestServer({ env: { INBOXD_LOGIN_MAX_FAILURES: "1000" } });
  ada = await register(server.api, { firstName: "Ada", lastName: "Lovelace" });
});
afterAll(() => server.cleanup());

const login = (body: unknown) => server.api.post("/auth/login", body);
const keysOf = (token: string) => server.api.get(`/organizations/${ada.organization.id}/api_keys`, token);

describe("POST /auth/login", () => {
  test("returns the user and a new access token that works on /organizations", async () => {
    const res = await login({ username: ada.user.email, password: testPassword });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user: ada.user, token: expect.stringMatching(/^at_[0-9a-f]{64}$/) });
    expect(res.body.token).not.toBe(ada.token);
    expect((await keysOf(res.body.token)).status).toBe(200);
    expect((await keysOf(ada.token)).status).toBe(200);
  });

  test("the email matches case-insensitively, and the alias `email` is accepted", async () => {
    expect((await login({ username: ada.user.email.toUpperCase(), password: testPassword })).status).toBe(200);
    expect((await login({ email: ada.user.email, password: testPassword })).status).toBe(200);
  });

  test("a wrong password and an unknown email get the same 401", async () => {
    const wrongPassword = await login({ username: ada.user.email, password: "wrong password" });
    const unknownEmail = await login({ username: "nobody@example.com", password: testPassword });
    const wrongCase = await login({ username: ada.user.email, password: testPassword.toUpperCase() });
    for (const res of [wrongPassword, unknownEmail, wrongCase]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: "Invalid credentials" });
    }
  });

  test("passwords match after NFKC normalization (composed and decomposed accents alike)", async () => {
    const composed = "caf\u00e9 au lait";
    const decomposed = "cafe\u0301 au lait";
    const user = await register(server.api, { password: composed });
    expect((await login({ username: user.user.email, password: decomposed })).status).toBe(200);
  });

  const badInput: [string, unknown, string][] = [
    ["missing username", { password: testPassword }, "username: is required"],
    ["missing password", { username: "ada@example.com" }, "password: is required"],
    ["username not a string", { username: 1, password: testPassword }, "username: Expected string"],
    ["password not a string", { username: "ada@example.com", password: { a: 1 } }, "password: Expected string"],
    ["empty username", { username: "", password: testPassword }, "username: must not be empty"],
    ["empty password", { username: "ada@example.com", password: "" }, "password: must not be empty"],
    ["username not an email", { username: "ada", password: testPassword }, "username: must be an email address"],
    ["password of 10 kB", { username: "ada@example.com", password: "x".repeat(10_240) }, "password: must be at most 1024 characters"],
    ["body an array instead of an object", ["ada@example.com", testPassword], "body: must be a JSON object"],
    ["no body", undefined, "body: Expected object"],
  ];
  test.each(badInput)("%s is 422 naming the field", async (_, body, error) => {
    const res = await login(body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error });
  });

  test("latency: an unknown email costs what a wrong password costs (a dummy hash is checked)", async () => {
    const samples = 15;
    const timed = async (body: unknown, status: number) => {
      const started = performance.now();
      expect((await login(body)).status).toBe(status);
      return performance.now() - started;
    };
    const median = (times: number[]) => times.sort((a, b) => a - b)[times.length >> 1]!;
    await login({ username: "warm-up@example.com", password: testPassword });
    // Taken in turns, so that other load on a busy machine falls on the three alike.
    const times = { success: [] as number[], wrongPassword: [] as number[], unknownEmail: [] as number[] };
    for (let i = 0; i < samples; i++) {
      times.success.push(await timed({ username: ada.user.email, password: testPassword }, 200));
      times.wrongPassword.push(await timed({ username: ada.user.email, password: "wrong password" }, 401));
      times.unknownEmail.push(await timed({ username: "nobody@example.com", password: "wrong password" }, 401));
    }
    const [success, wrongPassword, unknownEmail] = [median(times.success), median(times.wrongPassword), median(times.unknownEmail)];
    console.log(`login latency, median of ${samples} over HTTP: success ${success.toFixed(1)} ms, wrong password ${wrongPassword.toFixed(1)} ms, unknown email ${unknownEmail.toFixed(1)} ms`);
    expect(unknownEmail / wrongPassword).toBeGreaterThan(0.5);
    expect(unknownEmail / wrongPassword).toBeLessThan(2);
  });
});

test("the dummy hash an unknown email is checked against has the parameters of a real one, so it costs what a real check costs from the first login", async () => {
  const parameters = (hash: string) => hash.split("$").slice(1, 4);
  expect(parameters(dummyHash)).toEqual(parameters(await hashPassword("any password at all")));
  expect(await verifyAgainstDummy(testPassword)).toBe(false);
});

describe("access token lifetime", () => {
  test("a token works until 7 days after login, then gets 401 until the user logs in again", async () => {
    const { token } = (await login({ username: ada.user.email, password: testPassword })).body;
    server.clock.advance(7 * 24 * 3600_000 - 1000);
    expect((await keysOf(token)).status).toBe(200);
    server.clock.advance(1000);
    const expired = await keysOf(token);
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ error: "Access token expired: log in again" });
    const again = await login({ username: ada.user.email, password: testPassword });
    expect((await keysOf(again.body.token)).status).toBe(200);
  });

  test("expired tokens are removed from the store when their user logs in again", async () => {
    const rows = (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM access_tokens WHERE user_id = ? AND expires_at <= ?", ada.user.id, server.clock.now()))!;
    expect(rows.n).toBe(0);
  });
});

describe("POST /auth/logout", () => {
  const logout = (token?: string) => server.api.post("/auth/logout", undefined, token);

  test("revokes the access token it carries at once; the user's other tokens and API keys keep working", async () => {
    const signedIn = (await login({ username: ada.user.email, password: testPassword })).body.token;
    const other = (await login({ username: ada.user.email, password: testPassword })).body.token;
    expect((await keysOf(signedIn)).status).toBe(200);
    const res = await logout(signedIn);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(await keysOf(signedIn)).toMatchObject({ status: 401, body: { error: "Invalid access token" } });
    expect((await keysOf(other)).status).toBe(200);
    expect((await server.api.get("/v1/inboxes", ada.apiKey.key)).status).toBe(200);
    expect(await queryRow(server.app, "SELECT count(*) AS n FROM access_tokens WHERE token_hash = ?", sha256Hex(signedIn))).toEqual({ n: 0 });
  });

  test("a token signed out already, an unknown one, an API key or none: 401 with an error that says why", async () => {
    const signedIn = (await login({ username: ada.user.email, password: testPassword })).body.token;
    expect((await logout(signedIn)).status).toBe(200);
    expect(await logout(signedIn)).toMatchObject({ status: 401, body: { error: "Invalid access token" } });
    expect(await logout(`at_${"0".repeat(64)}`)).toMatchObject({ status: 401, body: { error: "Invalid access token" } });
    expect(await logout(ada.apiKey.key)).toMatchObject({ status: 401, body: { error: "API keys are not accepted by /auth/logout: use an access token from POST /auth/login" } });
    expect(await logout()).toMatchObject({ status: 401, body: { error: expect.stringContaining("Missing or malformed Authorization header") } });
  });

  test("an expired token is 401 as at any other use, and cleared: signed out again, it is unknown", async () => {
    const signedIn = (await login({ username: ada.user.email, password: testPassword })).body.token;
    server.clock.advance(7 * 24 * 3600_000);
    try {
      expect(await logout(signedIn)).toMatchObject({ status: 401, body: { error: "Access token expired: log in again" } });
      expect(await logout(signedIn)).toMatchObject({ status: 401, body: { error: "Invalid access token" } });
    } finally {
      server.clock.advance(-7 * 24 * 3600_000);
    }
  });
});
