// The queue lives in the database: inboxd killed with -9 during a try comes back without a hot
// retry loop, sends the pending retry once it is due (also when it fell due while inboxd was
// down) with the same event id, and never sends an event again after its success.
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { seedOrganization, startChildServer, startTestServer, tempDir, testEnv, type ChildServer } from "../harness";
import { startWebhookReceiver } from "../peers/webhook-receiver";
import { emitEvent, emitEvents, webhookQueue } from "./helpers";

const receiver = startWebhookReceiver();
const dataDirs: string[] = [];
const children: ChildServer[] = [];
// Next try after a lost outcome: timeout + the first delay after the claim (queue.ts: retryAt).
const timeoutMs = 1000;
const firstDelayMs = 1000;

afterAll(async () => {
  for (const child of children) if (child.proc.exitCode === null) await child.kill("SIGKILL");
  await receiver.close();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh data dir with an organization made straight in it, and a way to start inboxd on it. */
async function freshInstance() {
  const dataDir = tempDir();
  dataDirs.push(dataDir);
  const env = testEnv(dataDir, { INBOXD_WEBHOOK_RETRY_DELAYS: "1,1,1,1", INBOXD_WEBHOOK_TIMEOUT_MS: String(timeoutMs) });
  const app = await openApp(loadConfig(env));
  const { apiKey } = await seedOrganization(app);
  app.close();
  const start = async () => {
    const child = await startChildServer(env);
    children.push(child);
    return child;
  };
  return { apiKey, start };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 8000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

test("kill -9 during a try: the retry goes out after restart with the same id, once, and never again after its success", async () => {
  const { apiKey, start } = await freshInstance();
  receiver.respond("/hook", { delayMs: 30_000 });
  let child = await start();
  const created = await child.api.post("/v1/webhooks", { url: receiver.url("/hook"), events: ["message.received"] }, apiKey);
  expect(created.status).toBe(201);
  const webhookId = created.body.id;
  expect((await child.api.post(`/v1/webhooks/${webhookId}/test`, undefined, apiKey)).status).toBe(200);
  const [first] = await receiver.waitFor(1);
  expect(await child.kill("SIGKILL")).not.toBe(0);

  // Down past the retry time, so the retry falls due while nothing runs.
  receiver.respond("/hook", { status: 200 });
  await Bun.sleep(Math.max(0, first!.receivedAt + timeoutMs + firstDelayMs + 200 - Date.now()));
  child = await start();
  const restartedAt = Date.now();
  const [, second] = await receiver.waitFor(2, 5000);
  expect(second!.receivedAt - restartedAt).toBeLessThan(3000);
  expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
  expect(JSON.parse(second!.body).id).toBe(JSON.parse(first!.body).id);

  const attempts = await until("the success to be recorded", async () => {
    const list = (await child.api.get(`/v1/webhooks/${webhookId}/attempts`, apiKey)).body as any[];
    return list[0]?.success ? list : undefined;
  });
  expect(attempts.map((a) => [a.attemptNumber, a.success])).toEqual([
    [2, true],
    [1, false],
  ]);
  expect(attempts[1].error).toContain("stopped before the outcome");

  // Killed again after the success: nothing is sent again, whatever the restart finds.
  await child.kill("SIGKILL");
  child = await start();
  await Bun.sleep(timeoutMs + firstDelayMs + 500);
  expect(receiver.requests).toHaveLength(2);
  expect((await child.api.get(`/v1/webhooks/${webhookId}/attempts`, apiKey)).body).toHaveLength(2);
  await child.kill("SIGTERM");
}, 30_000);

test("after a restart, no try goes out before its retry time (no hot loop after a crash)", async () => {
  const { apiKey, start } = await freshInstance();
  receiver.respond("/slow", { delayMs: 30_000 });
  let child = await start();
  const created = await child.api.post("/v1/webhooks", { url: receiver.url("/slow"), events: ["message.received"] }, apiKey);
  await child.api.post(`/v1/webhooks/${created.body.id}/test`, undefined, apiKey);
  const before = receiver.requests.length;
  await until("the first try", async () => (receiver.requests.length > before ? true : undefined));
  const first = receiver.requests.at(-1)!;
  await child.kill("SIGKILL");
  child = await start();
  receiver.respond("/slow", { status: 200 });
  await until("the retry", async () => (receiver.requests.length > before + 1 ? true : undefined));
  const retry = receiver.requests.at(-1)!;
  // Its time counts from when the first try was recorded (its createdAt), before it was sent: the
  // receiver got that try later by as long as the machine was busy.
  const attempts = (await child.api.get(`/v1/webhooks/${created.body.id}/attempts`, apiKey)).body as { attemptNumber: number; createdAt: string }[];
  const firstRecordedAt = Date.parse(attempts.find((attempt) => attempt.attemptNumber === 1)!.createdAt);
  expect(firstRecordedAt).toBeLessThanOrEqual(first.receivedAt);
  expect(retry.receivedAt - firstRecordedAt).toBeGreaterThanOrEqual(timeoutMs + firstDelayMs);
  await child.kill("SIGTERM");
}, 30_000);

test("a graceful stop waits for tries in flight and gives back claims it had not sent", async () => {
  // Long enough that the stop surely comes while the first try is in flight.
  receiver.respond("/queued", { delayMs: 1500 });
  const env = { INBOXD_WEBHOOK_CONCURRENCY_PER_URL: "1", INBOXD_SHUTDOWN_TIMEOUT_MS: "5000" };
  const first = await startTestServer({ env });
  dataDirs.push(first.dataDir);
  const { organizationId, apiKey } = await seedOrganization(first.app);
  const created = await first.api.post("/v1/webhooks", { url: receiver.url("/queued"), events: ["message.received"] }, apiKey);
  await emitEvents(first.app, organizationId, Array.from({ length: 3 }, (_, i) => ({ type: "message.received", payload: { n: i } })));
  const before = receiver.requests.length;
  void webhookQueue(first).runDueNow();
  await until("the first try", async () => (receiver.requests.length > before ? true : undefined));
  await first.stop();

  receiver.respond("/queued", {});
  const second = await startTestServer({ env, dataDir: first.dataDir });
  try {
    const attempts = (await second.api.get(`/v1/webhooks/${created.body.id}/attempts`, apiKey)).body as any[];
    // The try in flight finished before the stop; the two claimed behind it were never sent, so left no attempt.
    expect(attempts.map((a) => [a.attemptNumber, a.success])).toEqual([[1, true]]);
    await webhookQueue(second).runDueNow();
    expect(receiver.requests.length - before).toBe(3);
  } finally {
    await second.stop();
  }
}, 30_000);

test("a delivery whose last try never reported back is discarded after a restart, not tried a sixth time", async () => {
  const env = { INBOXD_WEBHOOK_RETRY_DELAYS: "1,1,1,1", INBOXD_SHUTDOWN_TIMEOUT_MS: "50" };
  const first = await startTestServer({ env });
  dataDirs.push(first.dataDir);
  const { organizationId, apiKey } = await seedOrganization(first.app);
  const created = await first.api.post("/v1/webhooks", { url: receiver.url("/last"), events: ["message.received"] }, apiKey);
  receiver.respond("/last", { status: 500 });
  const before = receiver.requests.length;
  await emitEvent(first.app, organizationId, "message.received", { n: 1 });
  const queue = webhookQueue(first);
  await queue.runDueNow();
  let advanced = 0;
  const advance = (ms: number) => {
    first.clock.advance(ms);
    advanced += ms;
  };
  for (let i = 0; i < 3; i++) {
    advance(2000);
    await queue.runDueNow();
  }
  receiver.respond("/last", { delayMs: 2000 });
  advance(2000);
  void queue.runDueNow();
  await until("the fifth try", async () => (receiver.requests.length - before === 5 ? true : undefined));
  await first.stop();

  const second = await startTestServer({ env, dataDir: first.dataDir });
  try {
    second.clock.advance(advanced + 10_000);
    await webhookQueue(second).runDueNow();
    second.clock.advance(60_000);
    await webhookQueue(second).runDueNow();
    expect(receiver.requests.length - before).toBe(5);
    const attempts = (await second.api.get(`/v1/webhooks/${created.body.id}/attempts`, apiKey)).body as any[];
    expect(attempts.map((a) => a.attemptNumber)).toEqual([5, 4, 3, 2, 1]);
    expect(attempts[0].error).toContain("stopped before the outcome");
  } finally {
    await second.stop();
  }
}, 30_000);
