// Requests that race on one resource: a change or a child made while its parent is deleted, two
// changes at once. Each ends as if one had come first (success, or 404/409/422 naming why), never
// in a 500 or a 503, and leaves no row pointing at what is gone. On PostgreSQL (several nodes)
// each race below once gave a 500, a deadlock or an inbox on a deleted domain; on the embedded
// engine the checks made before a transaction did the same for some.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccessRule } from "../../src/access/service";
import { createDomain, deleteDomain, rotateDkimKeys } from "../../src/domains/service";
import { createDraft } from "../../src/drafts/service";
import { ServiceError, type ErrorKind } from "../../src/errors";
import { createInbox, deleteInbox, updateInbox } from "../../src/inboxes/service";
import { sendMessage } from "../../src/messages/send";
import { createWebhook, deleteWebhook, sendTestEvent, updateWebhook } from "../../src/webhooks/service";
import { seedOrganization, startTestServer, type TestServer } from "../harness";

let server: TestServer;
let organizationId: string;
beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_SEND_LIMIT: "10000" } });
  ({ organizationId } = await seedOrganization(server.app));
});
afterAll(() => server.cleanup());

const rounds = 12;

/** "ok", or the kind of the ServiceError it failed with; anything else fails the test. */
const outcome = (work: Promise<unknown>): Promise<"ok" | ErrorKind> =>
  work.then(
    () => "ok" as const,
    (error: unknown) => {
      if (error instanceof ServiceError) return error.kind;
      throw error;
    },
  );

describe("a change that meets its resource's delete", () => {
  test("an inbox created on a domain being deleted: either the delete is refused (409) or the creation (422); no inbox is left on a deleted domain", async () => {
    for (let round = 0; round < rounds; round++) {
      const name = `race${round}.example.org`;
      const domain = await createDomain(server.app, organizationId, { name });
      await server.app.store.domains.update(domain.id, { status: "verified", receiving: true });
      const [created, deleted] = await Promise.all([outcome(createInbox(server.app, organizationId, { email: `x@${name}` })), outcome(deleteDomain(server.app, organizationId, name))]);
      expect([[created, deleted]]).toContainEqual(created === "ok" ? ["ok", "conflict"] : ["invalid", "ok"]);
    }
    const domains = new Set((await server.app.store.domains.list(organizationId, 1, 100)).map((domain) => domain.name));
    const inboxes = await server.app.store.inboxes.list(organizationId, 1, 100);
    expect(inboxes.map((inbox) => inbox.email.split("@")[1]!).filter((domain) => domain !== "inboxd.test" && !domains.has(domain))).toEqual([]);
  });

  test("a PATCH, a draft, an access rule or a send in an inbox being deleted: done before the delete, or 404/422", async () => {
    for (let round = 0; round < rounds; round++) {
      const inbox = await createInbox(server.app, organizationId, {});
      const [renamed, drafted, ruled, sent, deleted] = await Promise.all([
        outcome(updateInbox(server.app, organizationId, inbox.id, { name: `Renamed ${round}` })),
        outcome(createDraft(server.app, organizationId, inbox.id, { subject: "s", text: "t" })),
        outcome(createAccessRule(server.app, organizationId, { inboxId: inbox.id, direction: "receive", action: "block", value: "spam.example" })),
        outcome(sendMessage(server.app, organizationId, inbox.id, { to: ["someone@elsewhere.example"], subject: "s", text: "t", html: "" })),
        outcome(deleteInbox(server.app, organizationId, inbox.id)),
      ]);
      expect(deleted).toBe("ok");
      for (const result of [renamed, drafted, sent]) expect(["ok", "not_found"]).toContain(result);
      expect(["ok", "invalid"]).toContain(ruled);
    }
  });

  test("a send to an inbox of this server being deleted: sent (with or without its copy), and the delete done", async () => {
    const sender = await createInbox(server.app, organizationId, {});
    const other = await seedOrganization(server.app, "Recipient org");
    for (let round = 0; round < rounds; round++) {
      const recipient = await createInbox(server.app, other.organizationId, {});
      const [sent, deleted] = await Promise.all([
        outcome(sendMessage(server.app, organizationId, sender.id, { to: [recipient.email], subject: `to a leaving inbox ${round}`, text: "t", html: "" })),
        outcome(deleteInbox(server.app, other.organizationId, recipient.id)),
      ]);
      expect([sent, deleted]).toEqual(["ok", "ok"]);
    }
  });

  test("a PATCH or a test event for a webhook being deleted: done before the delete, or 404", async () => {
    for (let round = 0; round < rounds; round++) {
      const webhook = await createWebhook(server.app, organizationId, { url: "http://127.0.0.1:9/hook", events: ["message.received"] });
      const [updated, tested, deleted] = await Promise.all([
        outcome(updateWebhook(server.app, organizationId, webhook.id, { enabled: false })),
        outcome(sendTestEvent(server.app, organizationId, webhook.id)),
        outcome(deleteWebhook(server.app, organizationId, webhook.id)),
      ]);
      expect(deleted).toBe("ok");
      for (const result of [updated, tested]) expect(["ok", "not_found"]).toContain(result);
    }
  });
});

describe("two changes at once", () => {
  test("two DKIM rotations of one domain: both done, each with selectors of its own", async () => {
    const name = "rotated.example.org";
    await createDomain(server.app, organizationId, { name });
    for (let round = 0; round < rounds; round++) {
      const results = await Promise.all([outcome(rotateDkimKeys(server.app, organizationId, name)), outcome(rotateDkimKeys(server.app, organizationId, name))]);
      expect(results).toEqual(["ok", "ok"]);
      // A domain gets 10 generations of keys a day: the rounds spread over days.
      if (round % 4 === 3) server.clock.advance(24 * 60 * 60_000);
    }
    const selectors = (await server.app.store.dkimKeys.forDomain(name)).map((key) => key.selector);
    expect(new Set(selectors).size).toBe(selectors.length);
  });
});
