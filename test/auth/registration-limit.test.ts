// Registrations per client address: INBOXD_REGISTER_LIMIT an hour (here 3), counted before the
// password is hashed; other addresses are unaffected, and the next hour's window starts afresh.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, testPassword, type TestServer } from "../harness";
import { postFrom } from "./client-address";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_REGISTER_LIMIT: "3" } });
});
afterAll(() => server.cleanup());

let count = 0;
const registerFrom = (address: string, overrides: Record<string, unknown> = {}) =>
  postFrom(address, server.api.baseUrl, "/auth/register", { firstName: "R", lastName: "L", username: `limit-${++count}@example.com`, password: testPassword, ...overrides });

test("the limit's edge: 3 registrations from one address in an hour, the 4th gets 429 with Retry-After", async () => {
  for (let i = 0; i < 3; i++) expect((await registerFrom("127.0.0.21")).status).toBe(201);
  const refused = await registerFrom("127.0.0.21");
  expect(refused.status).toBe(429);
  expect(refused.body).toEqual({ error: "Too many registrations from this address, please try again later." });
  const retryAfter = Number(refused.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(3600);
  expect((await registerFrom("127.0.0.22")).status).toBe(201);
});

test("a request refused for its input does not count; a new hour starts afresh", async () => {
  expect((await registerFrom("127.0.0.23", { password: "short" })).status).toBe(422);
  for (let i = 0; i < 3; i++) expect((await registerFrom("127.0.0.23")).status).toBe(201);
  expect((await registerFrom("127.0.0.23")).status).toBe(429);
  server.clock.advance(3_600_000);
  expect((await registerFrom("127.0.0.23")).status).toBe(201);
});
