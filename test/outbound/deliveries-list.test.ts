// GET /v1/deliveries: the outbound queue across an organization's inboxes, newest first, with its
// filters (status, recipient domain in any spelling, sending inbox), paging, 422 and 404, and tenancy.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { seedOrganization, type TestServer } from "../harness";
import { createInbox, startMessageServer, validSend } from "../messages/helpers";

let server: TestServer;
let key: string;
let first: { id: string; email: string };
let second: { id: string; email: string };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  key = (await seedOrganization(server.app)).apiKey;
  first = await createInbox(server, key, { name: "Billing" });
  second = await createInbox(server, key);
  for (const [inbox, to, subject] of [
    [first, ["a@one.test", "b@two.test"], "From the first"],
    [second, ["c@two.test"], "From the second"],
  ] as const) {
    const sent = await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, validSend({ to, subject }), key);
    expect(sent.status).toBe(201);
  }
});
afterAll(() => server.cleanup());

const list = (query = "", token = key) => server.api.get(`/v1/deliveries${query}`, token);

describe("GET /v1/deliveries", () => {
  test("every inbox's deliveries, newest first, each with its message's subject and sender", async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body.map((delivery: { recipient: string }) => delivery.recipient).sort()).toEqual(["a@one.test", "b@two.test", "c@two.test"]);
    expect(res.body[0]).toMatchObject({ recipient: "c@two.test", domain: "two.test", inboxId: second.id, subject: "From the second", from: second.email });
    expect(res.body[0].fromName).toBeUndefined();
    const billing = res.body.find((delivery: { recipient: string }) => delivery.recipient === "a@one.test");
    expect(billing).toMatchObject({ inboxId: first.id, subject: "From the first", fromName: "Billing", attempts: expect.any(Number), status: expect.any(String) });
    const message = (await server.api.get(`/v1/inboxes/${first.id}/messages/${billing.messageId}`, key)).body;
    expect(message.threadId).toBe(billing.threadId);
  });

  test("filters: sending inbox, recipient domain in any case, status; each narrows to the matching rows", async () => {
    expect((await list(`?inboxId=${first.id}`)).body.map((d: { recipient: string }) => d.recipient).sort()).toEqual(["a@one.test", "b@two.test"]);
    expect((await list("?domain=TWO.test")).body.map((d: { recipient: string }) => d.recipient).sort()).toEqual(["b@two.test", "c@two.test"]);
    expect((await list(`?domain=two.test&inboxId=${second.id}`)).body.map((d: { recipient: string }) => d.recipient)).toEqual(["c@two.test"]);
    expect((await list("?domain=three.test")).body).toEqual([]);
    expect((await list("?domain=two.test.")).body).toHaveLength(2);
    const all = (await list()).body as { status: string }[];
    for (const status of ["queued", "delivered", "bounced", "rejected"]) {
      const filtered = (await list(`?status=${status}`)).body as { status: string }[];
      expect(filtered.every((delivery) => delivery.status === status)).toBe(true);
      // Statuses only move forward, so a later read may hold more final ones, never fewer rows in all.
      expect(filtered.length).toBeLessThanOrEqual(all.length);
    }
  });

  test("paging: per=1 gives one delivery and a next link, without a total", async () => {
    const res = await list("?per=1&page=2");
    expect(res.body).toHaveLength(1);
    expect(res.headers.get("link")).toContain('rel="next"');
    expect(res.headers.get("x-total-count")).toBeNull();
    expect((await list("?per=1&page=3")).headers.get("link")).not.toContain('rel="next"');
  });

  test("the domain filter takes a domain as a send's recipient may spell it (IDN in U-labels, a root dot); not a domain is 422", async () => {
    const idn = (await server.api.post(`/v1/inboxes/${first.id}/messages/send`, validSend({ to: ["x@bücher.test"], subject: "IDN" }), key)).body;
    expect(idn.deliveries.map((d: { recipient: string }) => d.recipient)).toEqual(["x@xn--bcher-kva.test"]);
    for (const spelling of ["bücher.test", "BÜCHER.test.", "xn--bcher-kva.test"]) {
      expect((await list(`?domain=${encodeURIComponent(spelling)}`)).body.map((d: { recipient: string }) => d.recipient)).toEqual(["x@xn--bcher-kva.test"]);
    }
    const notADomain = await list("?domain=a%20b");
    expect(notADomain.status).toBe(422);
    expect(notADomain.body.error).toContain("domain");
  });

  test("a bad status is 422 naming it; an unknown or another organization's inbox 404; another organization sees nothing", async () => {
    const bad = await list("?status=lost");
    expect(bad.status).toBe(422);
    expect(bad.body.error).toContain("status");
    expect((await list("?inboxId=inb_unknown")).status).toBe(404);
    const other = (await seedOrganization(server.app, "Other")).apiKey;
    expect((await list(`?inboxId=${first.id}`, other)).status).toBe(404);
    expect((await list("", other)).body).toEqual([]);
    expect((await list("", "ik_wrong")).status).toBe(401);
  });
});
