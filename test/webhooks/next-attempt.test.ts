// A webhook attempt shows when its delivery is tried next (`nextAttemptAt`), by schedule A, and
// nothing once the delivery finished. The queue is driven with runDueNow and the server's clock.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomToken } from "../../src/ids";
import { insertInbox } from "../../src/inboxes/service";
import type { WebhookQueue } from "../../src/webhooks/queue";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { webhookQueue } from "./helpers";

// Three tries in all: at once, then 60 s and 300 s after a failure.
const delays = [60_000, 300_000];

let server: TestServer;
let receiver: WebhookReceiver;
let queue: WebhookQueue;

beforeAll(async () => {
  receiver = startWebhookReceiver();
  server = await startTestServer({ env: { INBOXD_WEBHOOK_RETRY_DELAYS: "60,300", INBOXD_WEBHOOK_TIMEOUT_MS: "300" } });
  queue = webhookQueue(server);
});
afterAll(async () => {
  await server.cleanup();
  await receiver.close();
});

const ms = (iso: string) => Date.parse(iso);

async function subscribe(path: string) {
  const organization = await seedOrganization(server.app);
  const created = await server.api.post("/v1/webhooks", { url: receiver.url(path), events: ["inbox.created"] }, organization.apiKey);
  expect(created.status).toBe(201);
  const attempts = async () => {
    const res = await server.api.get(`/v1/webhooks/${created.body.id}/attempts`, organization.apiKey);
    expect(res.status).toBe(200);
    return res.body as any[];
  };
  const createInbox = () => server.app.store.transaction((tx) => insertInbox(server.app, tx, organization.organizationId, { email: `${randomToken(8)}@inboxd.test` }));
  return { attempts, createInbox };
}

const advance = async (ms: number) => {
  server.clock.advance(ms);
  await queue.runDueNow();
};

test("a failed attempt shows when the next try is due; once one succeeds, none does", async () => {
  const s = await subscribe("/flaky");
  receiver.respond("/flaky", { status: 500 });
  await s.createInbox();
  await queue.runDueNow();
  const [first] = await s.attempts();
  expect(first).toMatchObject({ attemptNumber: 1, success: false, statusCode: 500 });
  expect(ms(first.nextAttemptAt)).toBe(ms(first.finishedAt) + delays[0]!);

  await advance(delays[0]! + 1000);
  const afterSecond = await s.attempts();
  expect(afterSecond.map((a) => a.attemptNumber)).toEqual([2, 1]);
  // The delivery's next try, on each of its attempts.
  expect(ms(afterSecond[0].nextAttemptAt)).toBe(ms(afterSecond[0].finishedAt) + delays[1]!);
  expect(afterSecond[1].nextAttemptAt).toBe(afterSecond[0].nextAttemptAt);

  receiver.respond("/flaky", { status: 204 });
  await advance(delays[1]! + 1000);
  const done = await s.attempts();
  expect(done.map((a) => [a.attemptNumber, a.success])).toEqual([
    [3, true],
    [2, false],
    [1, false],
  ]);
  for (const attempt of done) expect(attempt.nextAttemptAt).toBeUndefined();
});

test("after the last failure the delivery is discarded: no next try shown", async () => {
  const s = await subscribe("/down");
  receiver.respond("/down", { status: 503 });
  await s.createInbox();
  await queue.runDueNow();
  await advance(delays[0]! + 1000);
  const [second] = await s.attempts();
  expect(second.attemptNumber).toBe(2);
  expect(ms(second.nextAttemptAt)).toBe(ms(second.finishedAt) + delays[1]!);
  await advance(delays[1]! + 1000);
  const attempts = await s.attempts();
  expect(attempts.map((a) => [a.attemptNumber, a.success])).toEqual([
    [3, false],
    [2, false],
    [1, false],
  ]);
  for (const attempt of attempts) expect(attempt.nextAttemptAt).toBeUndefined();
});
