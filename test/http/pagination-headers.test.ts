// Lists over real HTTP: the body stays a bare array; RFC 8288 `Link` (next, prev, first, last)
// and `X-Total-Count` tell the pages, with links built from the request URL, other parameters
// kept; browsers may read both (CORS).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { apiClient, register, seedOrganization, startTestServer, type ApiResponse, type Registered, type TestServer } from "../harness";

let server: TestServer;
let account: Registered;
let key: string;
let base: string;
/** Inbox B, with three messages from the account's inbox, in three threads. */
let inboxB: { id: string; email: string };

beforeAll(async () => {
  server = await startTestServer();
  base = server.api.baseUrl;
  account = await register(server.api);
  key = account.apiKey.key;
  // Five inboxes in all: the registered one and four more.
  for (let i = 0; i < 4; i++) {
    const created = await server.api.post("/v1/inboxes", { name: `Inbox ${i}` }, key);
    expect(created.status).toBe(201);
    if (i === 0) inboxB = created.body;
  }
  for (let i = 1; i <= 3; i++) {
    const sent = await server.api.post(`/v1/inboxes/${account.inbox.id}/messages/send`, { to: [inboxB.email], subject: `Weekly report ${i}`, text: `Report number ${i}.`, html: `<p>Report number ${i}.</p>` }, key);
    expect(sent.status).toBe(201);
  }
});
afterAll(() => server.cleanup());

/** The Link header by relation; {} without one. */
function links(res: ApiResponse): Record<string, string> {
  const header = res.headers.get("link");
  if (!header) return {};
  const byRel: Record<string, string> = {};
  for (const part of header.split(", ")) {
    const match = /^<([^>]+)>; rel="([a-z]+)"$/.exec(part);
    if (!match) throw new Error(`not a link: ${part}`);
    byRel[match[2]!] = match[1]!;
  }
  return byRel;
}

const total = (res: ApiResponse) => res.headers.get("x-total-count");

describe("inboxes: five, two per page", () => {
  test("page 1: next, first and last, no prev; the total; the body a bare array of Inbox objects as get shows them", async () => {
    const res = await server.api.get("/v1/inboxes?per=2", key);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body).toHaveLength(2);
    expect(res.body[0]).toEqual((await server.api.get(`/v1/inboxes/${res.body[0].id}`, key)).body);
    expect(total(res)).toBe("5");
    expect(links(res)).toEqual({
      next: `${base}/v1/inboxes?per=2&page=2`,
      first: `${base}/v1/inboxes?per=2&page=1`,
      last: `${base}/v1/inboxes?per=2&page=3`,
    });
  });

  test("a middle page has both neighbours; `page` is replaced where it was written", async () => {
    const res = await server.api.get("/v1/inboxes?page=2&per=2", key);
    expect(res.body).toHaveLength(2);
    expect(total(res)).toBe("5");
    expect(links(res)).toEqual({
      next: `${base}/v1/inboxes?page=3&per=2`,
      prev: `${base}/v1/inboxes?page=1&per=2`,
      first: `${base}/v1/inboxes?page=1&per=2`,
      last: `${base}/v1/inboxes?page=3&per=2`,
    });
  });

  test("the last page has no next", async () => {
    const res = await server.api.get("/v1/inboxes?per=2&page=3", key);
    expect(res.body).toHaveLength(1);
    expect(total(res)).toBe("5");
    expect(links(res).next).toBeUndefined();
    expect(links(res).prev).toBe(`${base}/v1/inboxes?per=2&page=2`);
  });

  test("a full page that is also the last (the total is counted): no next", async () => {
    const res = await server.api.get("/v1/inboxes?per=5", key);
    expect(res.body).toHaveLength(5);
    expect(total(res)).toBe("5");
    expect(links(res)).toEqual({ first: `${base}/v1/inboxes?per=5&page=1`, last: `${base}/v1/inboxes?per=5&page=1` });
  });

  test("past the end: an empty array, prev leads to the last page", async () => {
    const res = await server.api.get("/v1/inboxes?per=2&page=9", key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(total(res)).toBe("5");
    expect(links(res)).toEqual({ prev: `${base}/v1/inboxes?per=2&page=3`, first: `${base}/v1/inboxes?per=2&page=1`, last: `${base}/v1/inboxes?per=2&page=3` });
  });

  test("without page or per: the defaults, one page, `page` added to the links", async () => {
    const res = await server.api.get("/v1/inboxes", key);
    expect(res.body).toHaveLength(5);
    expect(links(res)).toEqual({ first: `${base}/v1/inboxes?page=1`, last: `${base}/v1/inboxes?page=1` });
  });
});

describe("other lists", () => {
  test("an empty list: [], total 0, first and last page 1, neither next nor prev", async () => {
    const res = await server.api.get("/v1/webhooks", key);
    expect(res.body).toEqual([]);
    expect(total(res)).toBe("0");
    expect(links(res)).toEqual({ first: `${base}/v1/webhooks?page=1`, last: `${base}/v1/webhooks?page=1` });
  });

  test("messages of an inbox: next from one row read past the page, no total (the busiest read never counts)", async () => {
    const path = `/v1/inboxes/${inboxB.id}/messages`;
    const messages = await server.api.get(`${path}?per=2`, key);
    expect(messages.body.map((m: any) => m.subject)).toEqual(["Weekly report 3", "Weekly report 2"]);
    expect(total(messages)).toBeNull();
    expect(links(messages)).toEqual({ next: `${base}${path}?per=2&page=2`, first: `${base}${path}?per=2&page=1` });
    const second = await server.api.get(`${path}?per=2&page=2`, key);
    expect(second.body.map((m: any) => m.subject)).toEqual(["Weekly report 1"]);
    expect(links(second)).toEqual({ prev: `${base}${path}?per=2&page=1`, first: `${base}${path}?per=2&page=1` });
    // A full page that is the last: the row past it is not there, so no next.
    const whole = await server.api.get(`${path}?per=3`, key);
    expect(whole.body).toHaveLength(3);
    expect(links(whole)).toEqual({ first: `${base}${path}?per=3&page=1` });
    expect((await server.api.get(`${path}?per=2&page=5`, key)).body).toEqual([]);
  });

  test("threads of an inbox", async () => {

    const threads = await server.api.get(`/v1/inboxes/${inboxB.id}/threads?per=1&page=2`, key);
    expect(threads.body).toHaveLength(1);
    expect(total(threads)).toBe("3");
    expect(Object.keys(links(threads)).toSorted()).toEqual(["first", "last", "next", "prev"]);
  });

  test("another organization's inbox is still 404, without list headers", async () => {
    const other = await seedOrganization(server.app, "Other org");
    const res = await server.api.get(`/v1/inboxes/${inboxB.id}/messages?page=2`, other.apiKey);
    expect(res.status).toBe(404);
    expect(res.headers.get("link")).toBeNull();
    expect(total(res)).toBeNull();
  });

  test("a search keeps `query` (as written) and the other parameters in its links, and gives no total", async () => {
    const path = `/v1/inboxes/${inboxB.id}/messages`;
    const first = await server.api.get(`${path}?query=weekly%20report&per=2&extra=x`, key);
    expect(first.body).toHaveLength(2);
    expect(total(first)).toBeNull();
    expect(links(first)).toEqual({ next: `${base}${path}?query=weekly%20report&per=2&extra=x&page=2`, first: `${base}${path}?query=weekly%20report&per=2&extra=x&page=1` });
    const next = await server.api.get(links(first).next!.slice(base.length), key);
    expect(next.body.map((m: any) => m.subject)).toEqual(["Weekly report 1"]);
    // A word's search reads one match past the page: the last page says so.
    expect(links(next)).toEqual({ prev: `${base}${path}?query=weekly%20report&per=2&extra=x&page=1`, first: `${base}${path}?query=weekly%20report&per=2&extra=x&page=1` });

    // A regular expression's walk stops once the page is full: a full page links to a next one, which may be empty.
    const regex = await server.api.get(`${path}?query=${encodeURIComponent("/report [0-9]/")}&per=3`, key);
    expect(regex.body).toHaveLength(3);
    expect(links(regex).next).toBe(`${base}${path}?query=%2Freport%20%5B0-9%5D%2F&per=3&page=2`);
    expect((await server.api.get(links(regex).next!.slice(base.length), key)).body).toEqual([]);
  });

  test("API keys under /organizations (access token) and under /v1 (API key)", async () => {
    for (let i = 0; i < 2; i++) expect((await server.api.post("/v1/api_keys", { name: `key ${i}` }, key)).status).toBe(201);
    const path = `/organizations/${account.organization.id}/api_keys`;
    const byToken = await server.api.get(`${path}?per=2`, account.token);
    expect(byToken.body).toHaveLength(2);
    expect(byToken.body.every((k: any) => k.key === undefined)).toBe(true);
    expect(total(byToken)).toBe("3");
    expect(links(byToken).next).toBe(`${base}${path}?per=2&page=2`);
    const byKey = await server.api.get("/v1/api_keys?per=2&page=2", key);
    expect(byKey.body).toHaveLength(1);
    expect(total(byKey)).toBe("3");
    expect(links(byKey)).toEqual({ prev: `${base}/v1/api_keys?per=2&page=1`, first: `${base}/v1/api_keys?per=2&page=1`, last: `${base}/v1/api_keys?per=2&page=2` });
  });

  test("webhooks, domains and suppressions", async () => {
    const org = await seedOrganization(server.app, "Lists org");
    for (let i = 0; i < 3; i++) expect((await server.api.post("/v1/webhooks", { url: `http://127.0.0.1:9/hook-${i}`, events: ["inbox.created"] }, org.apiKey)).status).toBe(201);
    const webhooks = await server.api.get("/v1/webhooks?per=2", org.apiKey);
    expect(webhooks.body).toHaveLength(2);
    expect(total(webhooks)).toBe("3");
    expect(links(webhooks).next).toBe(`${base}/v1/webhooks?per=2&page=2`);

    for (const name of ["one.example", "two.example"]) expect((await server.api.post("/v1/domains", { name }, org.apiKey)).status).toBe(201);
    const domains = await server.api.get("/v1/domains?per=1", org.apiKey);
    expect(domains.body.map((d: any) => d.name)).toEqual(["two.example"]);
    expect(total(domains)).toBe("2");
    expect(links(domains).last).toBe(`${base}/v1/domains?per=1&page=2`);

    const now = server.clock.now();
    for (const address of ["a@gone.example", "b@gone.example", "c@gone.example"]) {
      await server.app.store.suppressions.upsert({ id: `sup_${address[0]}${now}`, organizationId: org.organizationId, address, reason: "bounced", detail: null, messageId: null, createdAt: now, updatedAt: now });
    }
    const suppressions = await server.api.get("/v1/suppressions?per=2&page=2", org.apiKey);
    expect(suppressions.body).toHaveLength(1);
    expect(total(suppressions)).toBe("3");
    expect(links(suppressions).next).toBeUndefined();
    expect(links(suppressions).prev).toBe(`${base}/v1/suppressions?per=2&page=1`);
  });
});

describe("CORS", () => {
  test("a cross-origin request may read Link and X-Total-Count, and still the rate-limit headers and X-Request-Id", async () => {
    const res = await server.api.request("GET", "/v1/inboxes?per=2", { token: key, headers: { origin: "https://console.example" } });
    expect(res.status).toBe(200);
    const exposed = res.headers.get("access-control-expose-headers")!.toLowerCase().split(/,\s*/);
    for (const header of ["link", "x-total-count", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after", "x-request-id"]) expect(exposed).toContain(header);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("the preflight of a list answers 204", async () => {
    const res = await server.api.request("OPTIONS", "/v1/inboxes", { headers: { origin: "https://console.example", "access-control-request-method": "GET", "access-control-request-headers": "authorization" } });
    expect(res.status).toBe(204);
  });
});

describe("behind a reverse proxy", () => {
  test("X-Forwarded-Proto and -Host count only from INBOXD_TRUSTED_PROXIES", async () => {
    const forwarded = { "x-forwarded-proto": "https", "x-forwarded-host": "api.example.com" };
    const direct = await server.api.request("GET", "/v1/inboxes?per=2", { token: key, headers: forwarded });
    expect(links(direct).next).toBe(`${base}/v1/inboxes?per=2&page=2`);

    const proxied = await startTestServer({ env: { INBOXD_TRUSTED_PROXIES: "127.0.0.1" } });
    try {
      const owner = await register(proxied.api);
      const api = apiClient(proxied.api.baseUrl);
      await api.post("/v1/inboxes", {}, owner.apiKey.key);
      const res = await api.request("GET", "/v1/inboxes?per=1", { token: owner.apiKey.key, headers: forwarded });
      expect(links(res)).toEqual({ next: "https://api.example.com/v1/inboxes?per=1&page=2", first: "https://api.example.com/v1/inboxes?per=1&page=1", last: "https://api.example.com/v1/inboxes?per=1&page=2" });
    } finally {
      await proxied.cleanup();
    }
  });
});
