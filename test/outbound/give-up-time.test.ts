// A queued delivery shows when it is tried next (`nextAttemptAt`) and when it bounces should every
// try fail (`expiresAt`: the next try plus the retry delays still to come). The queue is driven
// with runDueNow and the app's clock, never with real waits.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { queryRows } from "../harness";
import { startOutboundWorld, type OutboundWorld } from "./world";

// The world's schedule (INBOXD_DELIVERY_RETRY_DELAYS=60,120): three tries in all.
const delays = [60_000, 120_000];
// Each retry may go out up to a tenth of its delay later (src/outbound/policy.ts).
const jitter = 0.1;

let w: OutboundWorld;
beforeAll(async () => {
  w = await startOutboundWorld();
  // The only MX refuses connections (nothing listens on 127.0.0.2): every try is deferred.
  w.mx("down.test", [{ name: "mx.down.test", priority: 10, address: "127.0.0.2" }]);
});
afterAll(() => w.close());

const ms = (iso: string) => Date.parse(iso);

test("an unreachable MX: each try shows the next and the give-up time by the schedule, then the recipient bounces no earlier than it said", async () => {
  const sent = await w.send({ to: ["zed@down.test"] });
  // Not tried yet: due at once, and the last try falls due after the whole schedule.
  const queued = sent.deliveries[0];
  expect(queued).toMatchObject({ recipient: "zed@down.test", status: "queued", attempts: 0 });
  expect(ms(queued.nextAttemptAt)).toBe(ms(sent.createdAt));
  expect(ms(queued.expiresAt)).toBe(ms(sent.createdAt) + delays[0]! + delays[1]!);

  await w.queue.runDueNow();
  const first = (await w.message(sent.id)).deliveries[0];
  expect(first).toMatchObject({ status: "queued", attempts: 1, lastResponse: expect.stringMatching(/ECONNREFUSED|refused/i) });
  const firstRetry = ms(first.nextAttemptAt) - ms(first.updatedAt);
  expect(firstRetry).toBeGreaterThanOrEqual(delays[0]!);
  expect(firstRetry).toBeLessThanOrEqual(delays[0]! * (1 + jitter));
  expect(ms(first.expiresAt) - ms(first.nextAttemptAt)).toBe(delays[1]!);
  // The message view (thread get) shows the same.
  const thread = (await w.server.api.get(`/v1/inboxes/${w.inbox.id}/threads/${sent.threadId}`, w.apiKey)).body;
  expect(thread.messages[0].deliveries[0]).toMatchObject({ nextAttemptAt: first.nextAttemptAt, expiresAt: first.expiresAt });

  // Not due yet: nothing changes.
  await w.queue.runDueNow();
  expect((await w.message(sent.id)).deliveries[0]).toMatchObject({ attempts: 1, nextAttemptAt: first.nextAttemptAt });

  w.server.clock.advance(ms(first.nextAttemptAt) - w.server.clock.now() + 1);
  await w.queue.runDueNow();
  const second = (await w.message(sent.id)).deliveries[0];
  expect(second).toMatchObject({ status: "queued", attempts: 2 });
  const secondRetry = ms(second.nextAttemptAt) - ms(second.updatedAt);
  expect(secondRetry).toBeGreaterThanOrEqual(delays[1]!);
  expect(secondRetry).toBeLessThanOrEqual(delays[1]! * (1 + jitter));
  // The next try is the last one: it falls due when the delivery expires.
  expect(second.expiresAt).toBe(second.nextAttemptAt);
  expect(ms(second.expiresAt)).toBeGreaterThanOrEqual(ms(first.expiresAt));

  w.server.clock.advance(ms(second.nextAttemptAt) - w.server.clock.now() + 1);
  await w.queue.runDueNow();
  const message = await w.message(sent.id);
  expect(message.status).toBe("bounced");
  const last = message.deliveries[0];
  expect(last).toMatchObject({ status: "bounced", attempts: 3, lastResponse: expect.stringContaining("retries exhausted after 3 tries") });
  // Final: neither a next try nor a give-up time; it gave up no earlier than the first estimate.
  expect(last.nextAttemptAt).toBeUndefined();
  expect(last.expiresAt).toBeUndefined();
  expect(ms(last.updatedAt)).toBeGreaterThanOrEqual(ms(queued.expiresAt));
});

test("a delivery accepted at once shows no give-up time", async () => {
  w.mx("up.test");
  const sent = await w.send({ to: ["amy@up.test"] });
  await w.queue.runDueNow();
  const message = await w.message(sent.id);
  expect(message.status).toBe("delivered");
  expect(message.deliveries[0].expiresAt).toBeUndefined();
  expect(message.deliveries[0].nextAttemptAt).toBeUndefined();
});

test("a delivery accepted while the rest of its try is still being recorded (due until then, for a crash) shows no next try", async () => {
  const sent = await w.send({ to: ["ann@down.test"] });
  await w.queue.runDueNow();
  // As markAccepted leaves it until finishAccepted: delivered, and due (here later, so that no turn finishes it meanwhile).
  await queryRows(w.server.app, "UPDATE deliveries SET status = 'delivered', next_attempt_at = ? WHERE message_id = ?", w.server.clock.now() + 3_600_000, sent.id);
  const [delivery] = (await w.message(sent.id)).deliveries;
  expect(delivery.status).toBe("delivered");
  expect(delivery.nextAttemptAt).toBeUndefined();
});

test("a message.bounced event shows the give-up time of a recipient still queued, as a read of the message does", async () => {
  w.mx("refuses.test");
  w.answers.set("bob@refuses.test", { code: 550, message: "5.1.1 no such user" });
  const sent = await w.send({ to: ["bob@refuses.test", "cid@down.test"] });
  await w.queue.runDueNow();
  const { events } = await w.server.app.store.events.readAfter(sent.organizationId, { afterId: null, limit: 10_000, maxChars: Infinity });
  const bounced = events.find((event) => event.messageId === sent.id && event.type === "message.bounced")!;
  const queued = JSON.parse(bounced.payload).deliveries.find((delivery: { recipient: string }) => delivery.recipient === "cid@down.test");
  expect(queued).toMatchObject({ status: "queued", attempts: 1 });
  expect(queued.expiresAt).toBe((await w.message(sent.id)).deliveries.find((delivery: { recipient: string }) => delivery.recipient === "cid@down.test").expiresAt);
  expect(queued.expiresAt).toBeString();
});
