// /v1/access-rules over HTTP: create, list with filters, get, delete; values normalized and
// validated; duplicates; the per-organization limit at its edge; another organization's entries;
// and the decision itself (src/access/rules.ts) on addresses, tags, domains and subdomains.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { maxAccessRules } from "../../src/access/service";
import { decide, entryMatches, normalizeRuleValue, type AccessEntry } from "../../src/access/rules";
import { newId } from "../../src/ids";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";

let server: TestServer;
let key: string;
let organizationId: string;
let inbox: { id: string; email: string };
beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey: key, organizationId } = await seedOrganization(server.app));
  inbox = (await server.api.post("/v1/inboxes", {}, key)).body;
});
afterAll(() => server.cleanup());

const create = (body: Record<string, unknown>, token = key) => server.api.post("/v1/access-rules", body, token);

describe("the decision", () => {
  test("an address entry matches that address in any case and its +tags; a domain entry the domain and its subdomains", () => {
    expect(entryMatches("ada@example.com", "Ada@EXAMPLE.com")).toBe(true);
    expect(entryMatches("ada@example.com", "ada+news@example.com")).toBe(true);
    expect(entryMatches("ada+news@example.com", "ada@example.com")).toBe(false);
    expect(entryMatches("ada@example.com", "bob@example.com")).toBe(false);
    expect(entryMatches("example.com", "x@example.com")).toBe(true);
    expect(entryMatches("example.com", "x@mail.example.com")).toBe(true);
    expect(entryMatches("example.com", "x@badexample.com")).toBe(false);
    expect(entryMatches("example.com", "x@example.com.evil.net")).toBe(false);
    expect(entryMatches("example.com", "")).toBe(false);
    // A sender with a local part in UTF-8 (RFC 6531), as inboxd shows it: NFC, any case.
    expect(entryMatches("jörg@xn--mnchen-3ya.example", "Jörg@xn--mnchen-3ya.example")).toBe(true);
    expect(entryMatches("jörg@xn--mnchen-3ya.example", "jörg+news@xn--mnchen-3ya.example")).toBe(true);
    expect(entryMatches("jörg@xn--mnchen-3ya.example", "jorg@xn--mnchen-3ya.example")).toBe(false);
  });

  test("block wins over allow; allow entries let only what they match through; no entries pass everything", () => {
    const entry = (action: "allow" | "block", value: string): AccessEntry => ({ id: newId("acr"), inboxId: null, action, value });
    const allowDomain = entry("allow", "partner.com");
    const blockOne = entry("block", "spam@partner.com");
    expect(decide([], ["anyone@anywhere.net"])).toEqual({ pass: true });
    expect(decide([allowDomain], ["a@partner.com"])).toEqual({ pass: true });
    expect(decide([allowDomain], ["a@other.com"])).toEqual({ pass: false, notAllowed: true });
    expect(decide([allowDomain, blockOne], ["spam@partner.com"])).toEqual({ pass: false, blockedBy: blockOne });
    // Any of the sender's addresses: the envelope may be an ESP's while From is the partner's.
    expect(decide([allowDomain], ["bounces@esp.net", "a@partner.com"])).toEqual({ pass: true });
    expect(decide([allowDomain, blockOne], ["bounces@esp.net", "spam@partner.com"])).toEqual({ pass: false, blockedBy: blockOne });
  });

  test("values: addresses and domain names, normalized; anything else refused", () => {
    expect(normalizeRuleValue(" Ada@Example.COM ")).toEqual({ kind: "address", value: "ada@example.com" });
    expect(normalizeRuleValue("Example.COM.")).toEqual({ kind: "domain", value: "example.com" });
    expect(normalizeRuleValue("bücher.example")).toEqual({ kind: "domain", value: "xn--bcher-kva.example" });
    // The address of a received sender as shown, whose local part is in UTF-8; written in NFD and a U-label too.
    expect(normalizeRuleValue("Jörg@xn--mnchen-3ya.example")).toEqual({ kind: "address", value: "jörg@xn--mnchen-3ya.example" });
    expect(normalizeRuleValue("jo\u0308rg@münchen.example")).toEqual({ kind: "address", value: "jörg@xn--mnchen-3ya.example" });
    for (const bad of ["", "localhost", "*.example.com", "Ada <ada@example.com>", "https://example.com", "ada@", "@example.com", "exa mple.com", "a\r\n@example.com"]) {
      expect(normalizeRuleValue(bad)).toBeNull();
    }
  });
});

describe("POST /v1/access-rules", () => {
  test("201 with the normalized entry; organization-wide without inboxId, the inbox's with it", async () => {
    const wide = await create({ direction: "receive", action: "block", value: "Spammer@Example.org" });
    expect(wide.status).toBe(201);
    expect(wide.body).toMatchObject({ organizationId, direction: "receive", action: "block", value: "spammer@example.org", kind: "address" });
    expect(wide.body.id).toStartWith("acr_");
    expect(wide.body).not.toHaveProperty("inboxId");
    const own = await create({ direction: "send", action: "allow", value: "Partner.example", inboxId: inbox.id });
    expect(own.status).toBe(201);
    expect(own.body).toMatchObject({ inboxId: inbox.id, direction: "send", action: "allow", value: "partner.example", kind: "domain" });
    expect((await server.api.get(`/v1/access-rules/${own.body.id}`, key)).body).toEqual(own.body);
  });

  test("the same entry again, in any spelling: 409 naming it; the same value in another scope or action is another entry", async () => {
    const first = await create({ direction: "receive", action: "allow", value: "dup.example" });
    const again = await create({ direction: "receive", action: "allow", value: "DUP.example." });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe(`Access rule already exists: ${first.body.id}`);
    expect((await create({ direction: "receive", action: "allow", value: "dup.example", inboxId: inbox.id })).status).toBe(201);
    expect((await create({ direction: "receive", action: "block", value: "dup.example" })).status).toBe(201);
    expect((await create({ direction: "send", action: "allow", value: "dup.example" })).status).toBe(201);
  });

  test("422 for a bad direction, action, value or inbox, naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ direction: "both", action: "block", value: "a.example" }, "direction"],
      [{ direction: "receive", action: "deny", value: "a.example" }, "action"],
      [{ direction: "receive", action: "block" }, "value"],
      [{ direction: "receive", action: "block", value: "not a domain" }, "value"],
      [{ direction: "receive", action: "block", value: "*.example.com" }, "value"],
      [{ direction: "receive", action: "block", value: "x".repeat(1025) }, "value"],
      [{ direction: "receive", action: "block", value: "a.example", inboxId: "inb_unknown" }, "inboxId"],
      [{ direction: "receive", action: "block", value: "a.example", inboxId: "" }, "inboxId"],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expect(res.status).toBe(422);
      expect(res.body.error).toContain(field);
    }
  });

  test(`at most ${maxAccessRules} entries per organization, its inboxes' included: the next is 422`, async () => {
    const org = await seedOrganization(server.app);
    const now = server.app.clock.now();
    for (let i = 0; i < maxAccessRules - 1; i++) {
      await queryRows(server.app, "INSERT INTO access_rules (id, organization_id, inbox_id, direction, action, value, created_at, updated_at) VALUES (?, ?, NULL, 'receive', 'block', ?, ?, ?)", newId("acr"), org.organizationId, `blocked${i}.example`, now, now);
    }
    expect((await create({ direction: "send", action: "block", value: "last.example" }, org.apiKey)).status).toBe(201);
    const over = await create({ direction: "send", action: "block", value: "one-more.example" }, org.apiKey);
    expect(over.status).toBe(422);
    expect(over.body.error).toBe(`An organization may have at most ${maxAccessRules} access rules: delete some first`);
    // Another organization is not held back by this one's entries.
    expect((await create({ direction: "send", action: "block", value: "one-more.example" })).status).toBe(201);
  });

  test("created at the same moment: the same entry twice is one 201 and one 409; four at the last place take it once", async () => {
    const org = await seedOrganization(server.app);
    for (let round = 0; round < 8; round++) {
      const statuses = (await Promise.all([1, 2].map(() => create({ direction: "receive", action: "block", value: `twice${round}.example` }, org.apiKey)))).map((res) => res.status);
      expect(statuses.sort()).toEqual([201, 409]);
    }
    const now = server.app.clock.now();
    for (let i = 8; i < maxAccessRules - 1; i++) {
      await queryRows(server.app, "INSERT INTO access_rules (id, organization_id, inbox_id, direction, action, value, created_at, updated_at) VALUES (?, ?, NULL, 'receive', 'block', ?, ?, ?)", newId("acr"), org.organizationId, `filler${i}.example`, now, now);
    }
    const last = await Promise.all([1, 2, 3, 4].map((n) => create({ direction: "send", action: "block", value: `last${n}.example` }, org.apiKey)));
    expect(last.map((res) => res.status).sort()).toEqual([201, 422, 422, 422]);
    expect((await queryRows<{ n: number }>(server.app, "SELECT count(*) AS n FROM access_rules WHERE organization_id = ?", org.organizationId))[0]!.n).toBe(maxAccessRules);
  }, 60_000);
});

describe("GET and DELETE", () => {
  test("the list filters by direction, action and inbox (empty: organization-wide only), newest first, with X-Total-Count", async () => {
    const org = await seedOrganization(server.app);
    const own = (await server.api.post("/v1/inboxes", {}, org.apiKey)).body;
    const ids = [];
    for (const body of [
      { direction: "receive", action: "block", value: "one.example" },
      { direction: "receive", action: "allow", value: "two.example", inboxId: own.id },
      { direction: "send", action: "block", value: "three.example" },
    ]) {
      ids.push((await create(body, org.apiKey)).body.id);
    }
    const list = (query = "") => server.api.get(`/v1/access-rules${query}`, org.apiKey);
    const all = await list();
    expect(all.body.map((rule: { id: string }) => rule.id)).toEqual([...ids].reverse());
    expect(all.headers.get("x-total-count")).toBe("3");
    expect((await list("?direction=receive")).body.map((rule: { id: string }) => rule.id)).toEqual([ids[1], ids[0]]);
    expect((await list("?action=block&direction=send")).body.map((rule: { id: string }) => rule.id)).toEqual([ids[2]]);
    expect((await list(`?inboxId=${own.id}`)).body.map((rule: { id: string }) => rule.id)).toEqual([ids[1]]);
    expect((await list("?inboxId=")).body.map((rule: { id: string }) => rule.id)).toEqual([ids[2], ids[0]]);
    const paged = await list("?per=1&page=2");
    expect(paged.body.map((rule: { id: string }) => rule.id)).toEqual([ids[1]]);
    expect(paged.headers.get("x-total-count")).toBe("3");
    expect((await list("?direction=sideways")).status).toBe(422);
  });

  test("delete returns the entry, then 404; deleting an inbox takes its entries along", async () => {
    const rule = (await create({ direction: "receive", action: "block", value: "gone.example" })).body;
    expect(await server.api.delete(`/v1/access-rules/${rule.id}`, key)).toMatchObject({ status: 200, body: rule });
    expect(await server.api.delete(`/v1/access-rules/${rule.id}`, key)).toMatchObject({ status: 404, body: { error: "Access rule not found" } });
    expect((await server.api.get(`/v1/access-rules/${rule.id}`, key)).status).toBe(404);

    const doomed = (await server.api.post("/v1/inboxes", {}, key)).body;
    const own = (await create({ direction: "receive", action: "block", value: "x.example", inboxId: doomed.id })).body;
    expect((await server.api.delete(`/v1/inboxes/${doomed.id}`, key)).status).toBeLessThan(300);
    expect((await server.api.get(`/v1/access-rules/${own.id}`, key)).status).toBe(404);
  });

  test("another organization sees, gets and deletes none of them, nor adds one to an inbox not its own; no key is 401", async () => {
    const rule = (await create({ direction: "receive", action: "block", value: "private.example" })).body;
    const other = await seedOrganization(server.app);
    expect((await server.api.get(`/v1/access-rules/${rule.id}`, other.apiKey)).status).toBe(404);
    expect((await server.api.delete(`/v1/access-rules/${rule.id}`, other.apiKey)).status).toBe(404);
    expect((await server.api.get("/v1/access-rules", other.apiKey)).body).toEqual([]);
    for (const inboxId of [inbox.id, "inb_unknown"]) expect(await server.api.get(`/v1/access-rules?inboxId=${inboxId}`, other.apiKey)).toMatchObject({ status: 404, body: { error: "Inbox not found" } });
    const foreignInbox = await create({ direction: "receive", action: "block", value: "x.example", inboxId: inbox.id }, other.apiKey);
    expect(foreignInbox.status).toBe(422);
    expect(foreignInbox.body.error).toContain("inboxId");
    expect((await server.api.get(`/v1/access-rules/${rule.id}`, key)).status).toBe(200);
    expect((await server.api.get("/v1/access-rules")).status).toBe(401);
    expect((await create({ direction: "receive", action: "block", value: "x.example" }, "ik_wrong")).status).toBe(401);
  });
});
