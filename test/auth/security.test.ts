/**
 * The security matrix: each credential kind × each route family × own, other and unknown
 * organization, over every key-management route, plus malformed headers, a revoked key and an
 * expired token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiKey } from "../../src/auth/api-keys";
import { register, startTestServer, type Registered, type TestServer } from "../harness";

let server: TestServer;
let alice: Registered;
let bob: Registered;
let revokedKey: string;
beforeAll(async () => {
  server = await startTestServer();
  [alice, bob] = await Promise.all([register(server.api), register(server.api)]);
  const doomed = (await server.api.post("/v1/api_keys", { name: "doomed" }, alice.apiKey.key)).body;
  expect((await server.api.delete(`/v1/api_keys/${doomed.id}`, alice.apiKey.key)).status).toBe(200);
  revokedKey = doomed.key;
});
afterAll(() => server.cleanup());

type Family = "organizations" | "v1";
type Target = "own" | "other" | "unknown";

const malformed = "Missing or malformed Authorization header (expected: Bearer <credential>)";
const credentials: Record<string, () => Record<string, string>> = {
  "Alice's access token": () => ({ authorization: `Bearer ${alice.token}` }),
  "Alice's API key": () => ({ authorization: `Bearer ${alice.apiKey.key}` }),
  "no Authorization header": () => ({}),
  "a credential without Bearer": () => ({ authorization: alice.token }),
  "a Basic header": () => ({ authorization: `Basic ${btoa("alice:secret")}` }),
  "Bearer with two values": () => ({ authorization: `Bearer ${alice.token} ${alice.apiKey.key}` }),
  "an unknown access token": () => ({ authorization: `Bearer at_${"0".repeat(64)}` }),
  "an unknown API key": () => ({ authorization: `Bearer ik_${"0".repeat(32)}` }),
  "a revoked API key": () => ({ authorization: `Bearer ${revokedKey}` }),
};

const organizationOf = (target: Target) =>
  target === "own" ? alice.organization.id : target === "other" ? bob.organization.id : "org_000000000000000000000000";

/** A fresh key in the target organization, so that a DELETE that succeeds destroys nothing shared. */
const freshKeyId = async (target: Target) =>
  target === "unknown" ? "key_000000000000000000000000" : (await createApiKey(server.app.store, organizationOf(target), "matrix", server.clock.now())).id;

const routes = [
  { name: "list", method: "GET", byId: false, ok: 200 },
  { name: "create", method: "POST", byId: false, ok: 201, body: { name: "matrix" } },
  { name: "get", method: "GET", byId: true, ok: 200 },
  { name: "delete", method: "DELETE", byId: true, ok: 200 },
] as const;

async function pathOf(family: Family, target: Target, byId: boolean): Promise<string> {
  const base = family === "organizations" ? `/organizations/${organizationOf(target)}/api_keys` : "/v1/api_keys";
  return byId ? `${base}/${await freshKeyId(family === "v1" ? target : "own")}` : base;
}

// [credential, family, target organization, expected status ("ok" = the route's success), expected error or null]
const matrix: [string, Family, Target, "ok" | number, string | null][] = [
  ["Alice's access token", "organizations", "own", "ok", null],
  ["Alice's access token", "organizations", "other", 403, "You are not a member of this organization"],
  // The same answer as for another organization's id: no way to tell which ids exist.
  ["Alice's access token", "organizations", "unknown", 403, "You are not a member of this organization"],
  ["Alice's access token", "v1", "own", 401, "Access tokens are not accepted under /v1: use an API key"],
  ["Alice's API key", "organizations", "own", 401, "API keys are not accepted under /organizations: use an access token from POST /auth/login"],
  ["Alice's API key", "organizations", "other", 401, "API keys are not accepted under /organizations: use an access token from POST /auth/login"],
  ["Alice's API key", "v1", "own", "ok", null],
  ["Alice's API key", "v1", "other", 404, "API key not found"],
  ["Alice's API key", "v1", "unknown", 404, "API key not found"],
  ...(["organizations", "v1"] as Family[]).flatMap((family): [string, Family, Target, number, string][] => [
    ["no Authorization header", family, "own", 401, malformed],
    ["a credential without Bearer", family, "own", 401, malformed],
    ["a Basic header", family, "own", 401, malformed],
    ["Bearer with two values", family, "own", 401, malformed],
  ]),
  ["an unknown access token", "organizations", "own", 401, "Invalid access token"],
  ["an unknown API key", "v1", "own", 401, "Invalid API key"],
  ["a revoked API key", "v1", "own", 401, "Invalid API key"],
  ["a revoked API key", "organizations", "own", 401, "API keys are not accepted under /organizations: use an access token from POST /auth/login"],
];

describe("security matrix", () => {
  test.each(matrix)("%s on /%s, %s organization → %p", async (credential, family, target, expected, error) => {
    for (const route of routes) {
      // List and create have no key id: on /v1 they always act on the key's own organization.
      if (family === "v1" && target !== "own" && !route.byId) continue;
      const res = await server.api.request(route.method, await pathOf(family, target, route.byId), {
        headers: credentials[credential]!(),
        body: route.method === "POST" ? route.body : undefined,
      });
      const want = expected === "ok" ? route.ok : expected;
      expect({ route: route.name, status: res.status }).toEqual({ route: route.name, status: want });
      if (error) expect(res.body).toEqual({ error });
      else expect(res.body.organizationId ?? res.body[0]?.organizationId).toBe(alice.organization.id);
      // RFC 9110 §15.5.2: a 401 names the scheme that would work (RFC 6750 §3).
      expect(res.headers.get("www-authenticate")).toBe(want === 401 ? 'Bearer realm="inboxd"' : null);
    }
  });

  test("credentials are checked before the body: a refused one gets 401 whatever the body holds", async () => {
    const invalidBody = { name: 5 };
    const refused: [string, string, string][] = [
      ["/v1/api_keys", "no Authorization header", malformed],
      ["/v1/api_keys", "Alice's access token", "Access tokens are not accepted under /v1: use an API key"],
      ["/v1/api_keys", "an unknown API key", "Invalid API key"],
      [`/organizations/${alice.organization.id}/api_keys`, "Alice's API key", "API keys are not accepted under /organizations: use an access token from POST /auth/login"],
      [`/organizations/${alice.organization.id}/api_keys`, "an unknown access token", "Invalid access token"],
    ];
    for (const [path, credential, error] of refused) {
      const res = await server.api.request("POST", path, { headers: credentials[credential]!(), body: invalidBody });
      expect({ path, credential, status: res.status, body: res.body }).toEqual({ path, credential, status: 401, body: { error } });
    }
    const accepted = await server.api.request("POST", "/v1/api_keys", { headers: credentials["Alice's API key"]!(), body: invalidBody });
    expect(accepted.status).toBe(422);
  });

  test("Bob's credentials reach Bob's organization only", async () => {
    expect((await server.api.get(`/organizations/${bob.organization.id}/api_keys`, bob.token)).status).toBe(200);
    expect((await server.api.get(`/organizations/${alice.organization.id}/api_keys`, bob.token)).status).toBe(403);
    const listed = (await server.api.get("/v1/api_keys?per=100", bob.apiKey.key)).body as { organizationId: string }[];
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((k) => k.organizationId === bob.organization.id)).toBe(true);
  });

  test("the Bearer scheme is case-insensitive (RFC 7235 §2.1), and one or more spaces may follow it (RFC 6750 §2.1)", async () => {
    for (const authorization of [`bearer ${alice.apiKey.key}`, `Bearer   ${alice.apiKey.key}`]) {
      const res = await server.api.request("GET", "/v1/api_keys", { headers: { authorization } });
      expect({ authorization, status: res.status }).toEqual({ authorization, status: 200 });
    }
    const tab = await server.api.request("GET", "/v1/api_keys", { headers: { authorization: `Bearer\t${alice.apiKey.key}` } });
    expect(tab.body).toEqual({ error: malformed });
  });

  test("after 7 days the access token is refused while API keys keep working", async () => {
    server.clock.advance(7 * 24 * 3600_000);
    const expired = await server.api.get(`/organizations/${alice.organization.id}/api_keys`, alice.token);
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ error: "Access token expired: log in again" });
    expect((await server.api.get("/v1/api_keys", alice.apiKey.key)).status).toBe(200);
  });
});
