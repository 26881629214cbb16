import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addressSubject } from "../../src/auth/login-throttle";
import { queryRows, register, type Registered, startTestServer, testPassword, type TestServer } from "../harness";
import { postFrom } from "./client-address";

// The defaults: 10 failures per email or per address within a minute, then 300 s of 429.
let server: TestServer;
let ada: Registered;
let bob: Registered;
beforeAll(async () => {
  server = await startTestServer();
  [ada, bob] = await Promise.all([register(server.api), register(server.api)]);
});
afterAll(() => server.cleanup());

const lockoutMs = 300_000;
const minute = 60_000;
const loginFrom = (address: string, username: string, password = testPassword) =>
  postFrom(address, server.api.baseUrl, "/auth/login", { username, password });
const failTimes = async (times: number, address: string, username: (i: number) => string) => {
  for (let i = 0; i < times; i++) expect((await loginFrom(address, username(i), "wrong password")).status).toBe(401);
};
const expectLocked = (res: { status: number; body: unknown; headers: Headers }) => {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ error: "Too many failed logins, please try again later." });
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(lockoutMs / 1000);
};

describe("login brute-force limit", () => {
  test("10 failures for one email lock that email (even with the right password, from anywhere); others log in", async () => {
    await failTimes(10, "127.0.0.2", () => ada.user.email);
    expectLocked(await loginFrom("127.0.0.3", ada.user.email));
    expectLocked(await loginFrom("127.0.0.3", ada.user.email.toUpperCase()));
    expect((await loginFrom("127.0.0.4", bob.user.email)).status).toBe(200);
  });

  test("the lock lifts after the lockout period", async () => {
    server.clock.advance(lockoutMs - 2000);
    expectLocked(await loginFrom("127.0.0.3", ada.user.email));
    server.clock.advance(2000);
    expect((await loginFrom("127.0.0.3", ada.user.email)).status).toBe(200);
  });

  test("10 failures from one address, across emails, lock that address; other addresses are unaffected", async () => {
    await failTimes(10, "127.0.0.5", (i) => `guess-${i}@example.com`);
    expectLocked(await loginFrom("127.0.0.5", bob.user.email));
    expectLocked(await loginFrom("127.0.0.5", "never-tried@example.com"));
    expect((await loginFrom("127.0.0.6", bob.user.email)).status).toBe(200);
    server.clock.advance(lockoutMs);
    expect((await loginFrom("127.0.0.5", bob.user.email)).status).toBe(200);
  });

  test("failures count within the last minute: those of the minute before at the share of it still covered, none two minutes on", async () => {
    await failTimes(9, "127.0.0.7", () => ada.user.email);
    server.clock.advance(2 * minute);
    await failTimes(9, "127.0.0.7", () => ada.user.email);
    expect((await loginFrom("127.0.0.7", ada.user.email)).status).toBe(200);
    // Half of the window before still in the last minute: its 9 count as 5, and the 5th failure more
    // is the 10th (from addresses of their own, which count apart).
    await failTimes(9, "127.0.0.13", () => ada.user.email);
    server.clock.advance(minute + minute / 2);
    await failTimes(5, "127.0.0.14", () => ada.user.email);
    expectLocked(await loginFrom("127.0.0.15", ada.user.email));
    server.clock.advance(lockoutMs);
  });

  test("the window before is kept to be counted: another login's prune just after a window's end forgets nothing", async () => {
    await failTimes(1, "127.0.1.1", () => ada.user.email);
    server.clock.advance(minute - 1000);
    for (let i = 0; i < 8; i++) await failTimes(1, `127.0.1.${2 + i}`, () => ada.user.email);
    server.clock.advance(2000);
    // Any attempt prunes the rows whose time is over.
    await failTimes(1, "127.0.2.1", () => "nobody@example.com");
    await failTimes(1, "127.0.3.1", () => ada.user.email);
    expectLocked(await loginFrom("127.0.3.2", ada.user.email));
    server.clock.advance(lockoutMs);
  });

  test("one failure every 60.5 s, never two within a minute, never locks: an estimate is not counted again as attempts", async () => {
    for (let i = 0; i < 15; i++) {
      expect((await loginFrom(`127.0.4.${1 + i}`, bob.user.email, "wrong password")).status).toBe(401);
      server.clock.advance(60_500);
    }
  });

  test("9 failures just before a window ends and the 10th just after lock, as 10 within a minute", async () => {
    await failTimes(1, "127.0.0.21", () => bob.user.email);
    server.clock.advance(minute - 1000);
    await failTimes(8, "127.0.0.21", () => bob.user.email);
    server.clock.advance(2000);
    await failTimes(1, "127.0.0.21", () => bob.user.email);
    expectLocked(await loginFrom("127.0.0.22", bob.user.email));
    server.clock.advance(lockoutMs);
  });

  test("a successful login clears its email's count", async () => {
    server.clock.advance(minute);
    await failTimes(9, "127.0.0.8", () => bob.user.email);
    expect((await loginFrom("127.0.0.9", bob.user.email)).status).toBe(200);
    await failTimes(9, "127.0.0.10", () => bob.user.email);
    expect((await loginFrom("127.0.0.9", bob.user.email)).status).toBe(200);
  });

  test("successful logins do not count against their address", async () => {
    for (let i = 0; i < 12; i++) expect((await loginFrom("127.0.0.13", bob.user.email)).status).toBe(200);
    await failTimes(9, "127.0.0.13", (i) => `other-${i}@example.com`);
    expect((await loginFrom("127.0.0.13", bob.user.email)).status).toBe(200);
  });

  test("concurrent guesses cannot slip past the limit: attempts count before the password is checked", async () => {
    server.clock.advance(lockoutMs);
    const guesses = await Promise.all(Array.from({ length: 30 }, () => loginFrom("127.0.0.11", ada.user.email, "wrong password")));
    const statuses = guesses.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  });

  test("an attempt timed before its window's start (another node's clock a second behind) counts in that window", async () => {
    await failTimes(9, "127.0.5.1", () => bob.user.email);
    server.clock.advance(-1000);
    await failTimes(1, "127.0.5.2", () => bob.user.email);
    expectLocked(await loginFrom("127.0.5.3", bob.user.email));
    server.clock.advance(1000 + lockoutMs);
  });

  test("throttle rows are pruned once their window and lock are over", async () => {
    server.clock.advance(lockoutMs + minute);
    expect((await loginFrom("127.0.0.12", bob.user.email, "wrong password")).status).toBe(401);
    // The registrations of this file's two users (auth/registration-limit) count for an hour.
    const rows = (await queryRows<{ subject: string }>(server.app, "SELECT subject FROM login_throttles WHERE subject NOT LIKE 'register:%'")).map((r) => r.subject);
    expect(rows.sort()).toEqual([`email:${bob.user.email}`, "ip:127.0.0.12"]);
  });
});

describe("address subjects", () => {
  test("IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 by its /64", () => {
    expect(addressSubject("192.0.2.7")).toBe("ip:192.0.2.7");
    expect(addressSubject("::ffff:192.0.2.7")).toBe("ip:192.0.2.7");
    expect(addressSubject("2001:db8:1:2:aaaa::1")).toBe("ip:2001:db8:1:2::/64");
    expect(addressSubject("2001:db8:1:2:bbbb::9")).toBe("ip:2001:db8:1:2::/64");
    expect(addressSubject("not an address")).toBeUndefined();
  });
});
