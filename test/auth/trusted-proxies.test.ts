// Behind a reverse proxy: INBOXD_TRUSTED_PROXIES names the proxies whose X-Forwarded-For tells
// the client's address to the per-address limits; anyone else's X-Forwarded-For is ignored.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { clientAddress, trustedProxies } from "../../src/http/client-address";
import { startTestServer, testPassword, type TestServer } from "../harness";
import { postFrom } from "./client-address";

describe("clientAddress", () => {
  const trusted = trustedProxies(["127.0.0.41", "10.0.0.0/8", "fd00::/8"]);
  test.each([
    ["no proxy configured: the peer", "192.0.2.1", "198.51.100.7", trustedProxies([]), "192.0.2.1"],
    ["an untrusted peer's header is ignored", "192.0.2.1", "198.51.100.7", trusted, "192.0.2.1"],
    ["a trusted peer without the header: the peer", "127.0.0.41", null, trusted, "127.0.0.41"],
    ["a trusted peer: the address it saw", "127.0.0.41", "198.51.100.7", trusted, "198.51.100.7"],
    ["what the client wrote before it is not believed", "127.0.0.41", "203.0.113.66, 198.51.100.7", trusted, "198.51.100.7"],
    ["trusted hops are skipped, from the right", "127.0.0.41", "203.0.113.66, 198.51.100.7, 10.1.2.3", trusted, "198.51.100.7"],
    ["IPv6 clients and proxies", "fd00::1", "2001:db8::5", trusted, "2001:db8::5"],
    ["IPv4-mapped IPv6 peer counts as IPv4", "::ffff:127.0.0.41", "198.51.100.7", trusted, "198.51.100.7"],
    ["garbage in the header: the peer", "127.0.0.41", "198.51.100.7, not-an-address", trusted, "127.0.0.41"],
    ["only trusted hops: the peer", "127.0.0.41", "10.0.0.1", trusted, "127.0.0.41"],
  ] as const)("%s", (_, peer, header, list, expected) => {
    expect(clientAddress(peer, header, list)).toBe(expected);
  });

  test("INBOXD_TRUSTED_PROXIES takes IP addresses and CIDR ranges, and refuses anything else", () => {
    expect(loadConfig({ INBOXD_TRUSTED_PROXIES: "127.0.0.1, 10.0.0.0/8,::1" }).trustedProxies).toEqual(["127.0.0.1", "10.0.0.0/8", "::1"]);
    expect(() => loadConfig({ INBOXD_TRUSTED_PROXIES: "proxy.example.com" })).toThrow(/INBOXD_TRUSTED_PROXIES/);
    expect(() => loadConfig({ INBOXD_TRUSTED_PROXIES: "10.0.0.0/40" })).toThrow(/INBOXD_TRUSTED_PROXIES/);
  });
});

describe("over HTTP, with the registration limit at 1 an hour", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { INBOXD_REGISTER_LIMIT: "1", INBOXD_TRUSTED_PROXIES: "127.0.0.41" } });
  });
  afterAll(() => server.cleanup());

  let count = 0;
  const registerVia = (peer: string, forwardedFor: string) =>
    postFrom(peer, server.api.baseUrl, "/auth/register", { firstName: "P", lastName: "X", username: `proxied-${++count}@example.com`, password: testPassword }, { "x-forwarded-for": forwardedFor });

  test("through the trusted proxy each client has its own count", async () => {
    expect((await registerVia("127.0.0.41", "198.51.100.7")).status).toBe(201);
    expect((await registerVia("127.0.0.41", "198.51.100.7")).status).toBe(429);
    expect((await registerVia("127.0.0.41", "198.51.100.8")).status).toBe(201);
  });

  test("from anywhere else the header changes nothing: the peer counts", async () => {
    expect((await registerVia("127.0.0.42", "198.51.100.9")).status).toBe(201);
    expect((await registerVia("127.0.0.42", "198.51.100.10")).status).toBe(429);
  });
});
