// Webhook deliveries from the real server to a real receiver on loopback: body, headers and
// signature, fan-out, order, retries, timeouts, redirects, disabling and re-driving. The queue is
// driven with runDueNow and the server's clock, never with real waits for retries.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomToken } from "../../src/ids";
import { insertInbox } from "../../src/inboxes/service";
import type { WebhookQueue } from "../../src/webhooks/queue";
import { eventually, queryRow, seedOrganization, startTestServer, type TestServer } from "../harness";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { emitEvent, webhookQueue } from "./helpers";
import { verifyStandardWebhook } from "./standard-webhooks";

const minute = 60_000;
const day = 24 * 60 * minute;
// Schedule A: the waits after failures 1 to 4.
const retryDelays = [1 * minute, 5 * minute, 30 * minute, 120 * minute];

let server: TestServer;
let receiver: WebhookReceiver;
let queue: WebhookQueue;

beforeAll(async () => {
  receiver = startWebhookReceiver();
  // One request at a time per URL, so that arrival order shows dispatch order.
  server = await startTestServer({ env: { INBOXD_WEBHOOK_TIMEOUT_MS: "300", INBOXD_WEBHOOK_CONCURRENCY_PER_URL: "1" } });
  queue = webhookQueue(server);
});
afterAll(async () => {
  await server.cleanup();
  await receiver.close();
});

interface Subscribed {
  organizationId: string;
  apiKey: string;
  webhook: { id: string; secret: string; url: string };
}

/** A fresh organization (so no other test's webhooks see its events) with one webhook on `path`. */
async function subscribe(path: string, events: string[] = ["inbox.created"], organization?: { organizationId: string; apiKey: string }): Promise<Subscribed> {
  organization ??= await seedOrganization(server.app);
  const created = await server.api.post("/v1/webhooks", { url: receiver.url(path), events }, organization.apiKey);
  expect(created.status).toBe(201);
  return { ...organization, webhook: created.body };
}

const createInbox = (organizationId: string) => server.app.store.transaction((tx) => insertInbox(server.app, tx, organizationId, { email: `${randomToken(8)}@inboxd.test` }));
const requestsTo = (path: string) => receiver.requests.filter((r) => r.path === path);
const bodies = (path: string) => requestsTo(path).map((r) => JSON.parse(r.body));
const attemptsOf = async (s: Subscribed, query = "") => (await server.api.get(`/v1/webhooks/${s.webhook.id}/attempts${query}`, s.apiKey)).body as any[];
const webhookOf = async (s: Subscribed) => (await server.api.get(`/v1/webhooks/${s.webhook.id}`, s.apiKey)).body;
const advance = async (ms: number) => {
  server.clock.advance(ms);
  await queue.runDueNow();
};

describe("what a delivery carries", () => {
  test("a signed POST with both envelope shapes, the contract's headers and the event id", async () => {
    const s = await subscribe("/signed", ["inbox.created", "message.received"]);
    const inbox = await createInbox(s.organizationId);
    const message = { id: "msg_1", _id: "msg_1", inboxId: inbox.id, subject: "Grüße ✉️", status: "received" };
    const messageEventId = await emitEvent(server.app, s.organizationId, "message.received", message, { inboxId: inbox.id, messageId: "msg_1" });
    await queue.runDueNow();

    const received = requestsTo("/signed");
    expect(received).toHaveLength(2);
    for (const request of received) {
      expect(request.method).toBe("POST");
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers["user-agent"]).toBe("Service-Webhook/1.0");
      expect(JSON.parse(request.body).id).toBe(request.headers["webhook-id"]);
      const now = server.clock.now() / 1000;
      expect(await verifyStandardWebhook(s.webhook.secret, request.headers, request.body, now)).toBe(true);
      expect(await verifyStandardWebhook(s.webhook.secret, request.headers, request.body.replace("}", ' }'), now)).toBe(false);
      expect(await verifyStandardWebhook(`whsec_${Buffer.from(randomToken(24), "hex").toString("base64")}`, request.headers, request.body, now)).toBe(false);
    }

    const [inboxEvent, messageEvent] = bodies("/signed");
    expect(inboxEvent).toEqual({ id: expect.stringMatching(/^evt_/), event: "inbox.created", timestamp: inbox.createdAt, data: inbox, payload: inbox, inboxId: inbox.id });
    expect(messageEvent).toEqual({ id: messageEventId, event: "message.received", timestamp: expect.any(String), data: message, payload: message, inboxId: inbox.id, messageId: "msg_1" });

    const attempts = await attemptsOf(s);
    expect(attempts.map((a) => [a.event, a.attemptNumber, a.success, a.statusCode])).toEqual([
      ["message.received", 1, true, 200],
      ["inbox.created", 1, true, 200],
    ]);
    expect(attempts[0]).toMatchObject({ _id: attempts[0].id, webhookId: s.webhook.id, eventId: messageEventId, url: s.webhook.url, payload: messageEvent });
    expect(attempts[0].id).toMatch(/^wha_/);
    expect(Date.parse(attempts[0].createdAt)).not.toBeNaN();
  });

  test("the attempts log shows the body that was sent, its attachments without their content (a page of them was gigabytes)", async () => {
    const s = await subscribe("/with-file", ["message.received"]);
    const sender = await createInbox(s.organizationId);
    const recipient = await createInbox(s.organizationId);
    const file = Buffer.alloc(100_000, 5).toString("base64");
    const sent = await server.api.post(`/v1/inboxes/${sender.id}/messages/send`, { to: [recipient.email], subject: "With a file", text: "attached", html: "", attachments: [{ name: "f.bin", content: file }] }, s.apiKey);
    expect(sent.status).toBe(201);
    await queue.runDueNow();
    const [delivered] = bodies("/with-file");
    expect(delivered.data.attachments[0].content).toBe(file);
    const [attempt] = await attemptsOf(s);
    const { content: _content, ...listed } = delivered.data.attachments[0];
    const withoutContent = { ...delivered.data, attachments: [listed] };
    expect(attempt.payload).toEqual({ ...delivered, data: withoutContent, payload: withoutContent });
  });

  test("the response body is kept in the attempt up to 4 kB", async () => {
    const s = await subscribe("/chatty");
    receiver.respond("/chatty", { status: 500, body: "é".repeat(3000) + "x".repeat(10_000) });
    await createInbox(s.organizationId);
    await queue.runDueNow();
    const [attempt] = await attemptsOf(s);
    expect(attempt.statusCode).toBe(500);
    expect(Buffer.byteLength(attempt.response)).toBeLessThanOrEqual(4096);
    expect(attempt.response.startsWith("é".repeat(2000))).toBe(true);
  });
});

describe("fan-out", () => {
  test("every event goes to each subscribed webhook of its organization, in the transaction of the change", async () => {
    const s = await subscribe("/fan-a");
    const sibling = await subscribe("/fan-b", ["message.sent"], s);
    const stranger = await subscribe("/fan-c");
    await createInbox(s.organizationId);
    await expect(
      server.app.store.transaction(async (tx) => {
        await insertInbox(server.app, tx, s.organizationId, { email: `${randomToken(8)}@inboxd.test` });
        throw new Error("the change fails after its event was written");
      }),
    ).rejects.toThrow("the change fails");
    await queue.runDueNow();
    expect(requestsTo("/fan-a")).toHaveLength(1);
    expect(await attemptsOf(sibling)).toEqual([]);
    expect(await attemptsOf(stranger)).toEqual([]);
  });

  test("the inbox API's events arrive with the inbox as the API shows it; inbox.deleted carries it as it was", async () => {
    const s = await subscribe("/inboxes", ["inbox.created", "inbox.updated", "inbox.deleted"]);
    const created = await server.api.post("/v1/inboxes", { name: "Support" }, s.apiKey);
    server.clock.advance(1);
    const updated = await server.api.patch(`/v1/inboxes/${created.body.id}`, { name: "Help desk" }, s.apiKey);
    server.clock.advance(1);
    const deleted = await server.api.delete(`/v1/inboxes/${created.body.id}`, s.apiKey);
    expect([created.status, updated.status, deleted.status]).toEqual([201, 200, 200]);
    await queue.runDueNow();
    expect(bodies("/inboxes").map((b) => [b.event, b.data, b.payload, b.inboxId])).toEqual([
      ["inbox.created", created.body, created.body, created.body.id],
      ["inbox.updated", updated.body, updated.body, created.body.id],
      ["inbox.deleted", deleted.body, deleted.body, created.body.id],
    ]);
  });

  test("events to one webhook go out in the order they happened when they are due together", async () => {
    const s = await subscribe("/ordered", ["message.received"]);
    const ids = await server.app.store.transaction(async (tx) => {
      const emitted: string[] = [];
      for (let i = 0; i < 12; i++) emitted.push(await tx.events.emit({ organizationId: s.organizationId, type: "message.received", payload: { n: i } }, server.clock.now()));
      return emitted;
    });
    await queue.runDueNow();
    expect(bodies("/ordered").map((b) => b.id)).toEqual(ids);
  });

  test("the test endpoint queues a message.received {test} event for that webhook only", async () => {
    const s = await subscribe("/test-a", ["message.received"]);
    await subscribe("/test-b", ["message.received"], s);
    const reply = await server.api.post(`/v1/webhooks/${s.webhook.id}/test`, undefined, s.apiKey);
    expect(reply).toMatchObject({ status: 200, body: { success: true } });
    await queue.runDueNow();
    expect(requestsTo("/test-b")).toHaveLength(0);
    const [body] = bodies("/test-a");
    expect(body).toEqual({ id: expect.stringMatching(/^evt_test_/), event: "message.received", timestamp: expect.any(String), data: { test: expect.any(String) }, payload: { test: expect.any(String) } });
    expect(await verifyStandardWebhook(s.webhook.secret, requestsTo("/test-a")[0]!.headers, requestsTo("/test-a")[0]!.body, server.clock.now() / 1000)).toBe(true);
  });
});

describe("retries (schedule A)", () => {
  test("failures then a success: attempts 1 to 3, one event id, nothing sent after the success", async () => {
    const s = await subscribe("/flaky");
    receiver.respond("/flaky", { status: 500 });
    await createInbox(s.organizationId);
    await queue.runDueNow();
    await advance(retryDelays[0]! - 1000);
    expect(requestsTo("/flaky")).toHaveLength(1);
    await advance(2000);
    expect(requestsTo("/flaky")).toHaveLength(2);
    receiver.respond("/flaky", { status: 204 });
    await advance(retryDelays[1]! + 1000);
    expect(requestsTo("/flaky")).toHaveLength(3);
    await advance(3 * 60 * minute);
    expect(requestsTo("/flaky")).toHaveLength(3);

    const ids = requestsTo("/flaky").map((r) => r.headers["webhook-id"]);
    expect(new Set(ids).size).toBe(1);
    expect(new Set(bodies("/flaky").map((b) => b.id))).toEqual(new Set(ids));
    const attempts = await attemptsOf(s);
    expect(attempts.map((a) => [a.attemptNumber, a.success, a.statusCode])).toEqual([
      [3, true, 204],
      [2, false, 500],
      [1, false, 500],
    ]);
    expect(new Set(attempts.map((a) => a.payload.id))).toEqual(new Set(ids));
    expect((await attemptsOf(s, "?per=1&page=2")).map((a) => a.attemptNumber)).toEqual([2]);
  });

  /** A webhook at `path`, whose receiver answers 503, and an event of it tried until its delivery failed for good. */
  async function discardedDelivery(path: string) {
    const s = await subscribe(path);
    receiver.respond(path, { status: 503 });
    await createInbox(s.organizationId);
    await queue.runDueNow();
    for (const delay of retryDelays) await advance(delay + 1000);
    return s;
  }
  const redrive = (s: Subscribed, attemptId: string) => server.api.post(`/v1/webhooks/${s.webhook.id}/attempts/${attemptId}/retry`, undefined, s.apiKey);

  test("a re-drive asked while a try is under way: that try's failure leaves the delivery due at once, not after its retry delay", async () => {
    // A server of its own, whose tries wait 10 s for an answer: this one stays in flight however
    // long the re-drive takes on a busy machine (the shared server gives up after 300 ms).
    const patient = await startTestServer({ env: { INBOXD_WEBHOOK_TIMEOUT_MS: "10000" } });
    try {
      const patientQueue = webhookQueue(patient);
      const organization = await seedOrganization(patient.app);
      const created = await patient.api.post("/v1/webhooks", { url: receiver.url("/busy"), events: ["inbox.created"] }, organization.apiKey);
      const attempts = async () => (await patient.api.get(`/v1/webhooks/${created.body.id}/attempts`, organization.apiKey)).body as any[];
      const answered = Promise.withResolvers<void>();
      receiver.respond("/busy", { status: 500, hold: answered.promise });
      await patient.app.store.transaction((tx) => insertInbox(patient.app, tx, organization.organizationId, { email: `${randomToken(8)}@inboxd.test` }));
      const running = patientQueue.runDueNow();
      try {
        const [inFlight] = await eventually("the try under way", attempts, (list) => list.length === 1);
        expect(inFlight.finishedAt).toBeUndefined();
        expect(await patient.api.post(`/v1/webhooks/${created.body.id}/attempts/${inFlight.id}/retry`, undefined, organization.apiKey)).toMatchObject({ status: 200, body: { success: true } });
      } finally {
        // The try under way answers 500 (its answer was chosen as it came); the next one, 200.
        receiver.respond("/busy", { status: 200 });
        answered.resolve();
        await running;
      }
      await eventually("the failed try recorded", attempts, (list) => list[0]?.finishedAt !== undefined);
      await patientQueue.runDueNow();
      await eventually("the re-driven try", async () => requestsTo("/busy").length, (count) => count === 2);
      expect((await attempts()).map((a) => [a.attemptNumber, a.success])).toEqual([
        [2, true],
        [1, false],
      ]);
    } finally {
      await patient.cleanup();
    }
  });

  test("an event type taken out of a webhook's events: its retries go no more, and a re-drive of it is 422", async () => {
    const s = await subscribe("/narrowed", ["inbox.created", "inbox.deleted"]);
    receiver.respond("/narrowed", { status: 500 });
    await createInbox(s.organizationId);
    await queue.runDueNow();
    expect(requestsTo("/narrowed")).toHaveLength(1);
    const patched = await server.api.patch(`/v1/webhooks/${s.webhook.id}`, { events: ["inbox.deleted"] }, s.apiKey);
    expect(patched.status).toBe(200);
    for (const delay of retryDelays) await advance(delay + 1000);
    expect(requestsTo("/narrowed")).toHaveLength(1);
    const [attempt] = await attemptsOf(s);
    expect(attempt.nextAttemptAt).toBeUndefined();
    const redriven = await redrive(s, attempt.id);
    expect(redriven.status).toBe(422);
    expect(redriven.body.error).toStartWith("The webhook no longer subscribes to inbox.created");
    // A test event goes whatever the webhook subscribes to.
    expect((await server.api.post(`/v1/webhooks/${s.webhook.id}/test`, undefined, s.apiKey)).status).toBe(200);
    await queue.runDueNow();
    expect(requestsTo("/narrowed")).toHaveLength(2);
  });

  test("after the fifth failure the event is discarded and kept; re-driving sends it again with the same id", async () => {
    const s = await discardedDelivery("/down");
    expect(requestsTo("/down")).toHaveLength(5);
    await advance(day);
    expect(requestsTo("/down")).toHaveLength(5);
    const attempts = await attemptsOf(s);
    expect(attempts.map((a) => [a.attemptNumber, a.success])).toEqual([5, 4, 3, 2, 1].map((n) => [n, false]));
    expect((await webhookOf(s)).enabled).toBe(true);

    receiver.respond("/down", { status: 200 });
    const retried = await redrive(s, attempts[0].id);
    expect(retried).toMatchObject({ status: 200, body: { success: true } });
    await queue.runDueNow();
    const received = requestsTo("/down");
    expect(received).toHaveLength(6);
    expect(received[5]!.headers["webhook-id"]).toBe(received[0]!.headers["webhook-id"]);
    const [latest] = await attemptsOf(s);
    expect(latest).toMatchObject({ attemptNumber: 1, success: true, eventId: received[0]!.headers["webhook-id"] });

    const unknown = await redrive(s, "wha_nope");
    expect(unknown).toMatchObject({ status: 404, body: { error: "Webhook attempt not found" } });
  });

  test("a finished attempt re-driven again while its new delivery is pending brings that one forward: one delivery under way, not a chain of tries per call", async () => {
    const s = await discardedDelivery("/redrive-again");
    const [lastOfFirst] = await attemptsOf(s);
    const eventId = lastOfFirst!.eventId;
    const deliveriesOfEvent = async () => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = ?", eventId))!.n;
    expect(await deliveriesOfEvent()).toBe(1);
    // Four re-drives while the receiver still fails: the first queues a delivery, each next one tries it again.
    for (let i = 0; i < 4; i++) {
      expect(await redrive(s, lastOfFirst!.id)).toMatchObject({ status: 200 });
      await queue.runDueNow();
    }
    expect(await deliveriesOfEvent()).toBe(2);
    expect(requestsTo("/redrive-again")).toHaveLength(5 + 4);
    receiver.respond("/redrive-again", { status: 200 });
    await redrive(s, lastOfFirst!.id);
    await queue.runDueNow();
    expect(await deliveriesOfEvent()).toBe(2);
    expect((await attemptsOf(s))[0]).toMatchObject({ attemptNumber: 5, success: true, eventId });
  });

  test("re-driving a delivery that is still being retried brings its next try forward", async () => {
    const s = await subscribe("/redrive-pending");
    receiver.respond("/redrive-pending", { status: 500 });
    await createInbox(s.organizationId);
    await queue.runDueNow();
    receiver.respond("/redrive-pending", { status: 200 });
    const [first] = await attemptsOf(s);
    await redrive(s, first.id);
    await queue.runDueNow();
    expect((await attemptsOf(s)).map((a) => [a.attemptNumber, a.success])).toEqual([
      [2, true],
      [1, false],
    ]);
  });

  test("no answer within INBOXD_WEBHOOK_TIMEOUT_MS is a failure", async () => {
    const s = await subscribe("/slow");
    receiver.respond("/slow", { delayMs: 2000 });
    await createInbox(s.organizationId);
    const started = Date.now();
    await queue.runDueNow();
    expect(Date.now() - started).toBeLessThan(1500);
    const [attempt] = await attemptsOf(s);
    expect(attempt).toMatchObject({ attemptNumber: 1, success: false, error: "no answer within 300 ms" });
    expect(attempt.statusCode).toBeUndefined();
    receiver.respond("/slow", {});
    await advance(retryDelays[0]! + 1000);
    expect((await attemptsOf(s))[0]).toMatchObject({ attemptNumber: 2, success: true });
  });

  test("a redirect is a failure and is not followed", async () => {
    const s = await subscribe("/moved");
    receiver.respond("/moved", { redirect: receiver.url("/moved-here") });
    await createInbox(s.organizationId);
    await queue.runDueNow();
    expect(requestsTo("/moved-here")).toHaveLength(0);
    const [attempt] = await attemptsOf(s);
    expect(attempt).toMatchObject({ statusCode: 302, success: false });
    expect(attempt.error).toContain("not followed");
  });
});

describe("disabling", () => {
  test("410 Gone disables the webhook at once and discards what was queued; PATCH enabled: true re-enables it", async () => {
    const s = await subscribe("/gone");
    receiver.respond("/gone", { status: 410 });
    await createInbox(s.organizationId);
    await createInbox(s.organizationId);
    await queue.runDueNow();
    expect(requestsTo("/gone")).toHaveLength(1);
    expect(await webhookOf(s)).toMatchObject({ enabled: false, disabledReason: "The endpoint answered 410 Gone" });

    await createInbox(s.organizationId);
    await advance(day);
    expect(requestsTo("/gone")).toHaveLength(1);

    receiver.respond("/gone", { status: 200 });
    const enabled = await server.api.patch(`/v1/webhooks/${s.webhook.id}`, { enabled: true }, s.apiKey);
    expect(enabled.status).toBe(200);
    expect(enabled.body.enabled).toBe(true);
    expect(enabled.body).not.toHaveProperty("disabledReason");
    await createInbox(s.organizationId);
    await queue.runDueNow();
    expect(requestsTo("/gone")).toHaveLength(2);
  });

  test("five days of nothing but failures disables the webhook; a success in between starts the count again", async () => {
    const failing = await subscribe("/failing");
    const recovering = await subscribe("/recovering");
    receiver.respond("/failing", { status: 500 });
    receiver.respond("/recovering", { status: 500 });
    await createInbox(failing.organizationId);
    await createInbox(recovering.organizationId);
    await queue.runDueNow();

    await advance(3 * day);
    receiver.respond("/recovering", { status: 200 });
    await createInbox(recovering.organizationId);
    await queue.runDueNow();
    receiver.respond("/recovering", { status: 500 });

    await advance(1 * day);
    await createInbox(failing.organizationId);
    await createInbox(recovering.organizationId);
    await queue.runDueNow();
    expect((await webhookOf(failing)).enabled).toBe(true);

    await advance(1 * day + minute);
    const disabled = await webhookOf(failing);
    expect(disabled.enabled).toBe(false);
    expect(disabled.disabledReason).toContain("5 days");
    expect((await webhookOf(recovering)).enabled).toBe(true);
  });

  test("PATCH enabled: false stops deliveries; the test endpoint still reaches a disabled webhook", async () => {
    const s = await subscribe("/paused", ["inbox.created", "message.received"]);
    const disabled = await server.api.patch(`/v1/webhooks/${s.webhook.id}`, { enabled: false }, s.apiKey);
    expect(disabled.body).toMatchObject({ enabled: false, disabledReason: "Disabled through the API" });
    await createInbox(s.organizationId);
    await server.api.post(`/v1/webhooks/${s.webhook.id}/test`, undefined, s.apiKey);
    await queue.runDueNow();
    expect(bodies("/paused").map((b) => b.event)).toEqual(["message.received"]);
  });
});
