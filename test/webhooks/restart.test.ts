// The queue lives in the database: inboxd killed with -9 during a try comes back without a hot
// retry loop, sends the pending retry once it is due (also when it fell due while inboxd was
// down) with the same event id, and never sends an event again after its success.
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { seedOrganization, startChildServer, tempDir, testEnv, type ChildServer } from "../harness";
import { startWebhookReceiver } from "../peers/webhook-receiver";

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
function freshInstance() {
  const dataDir = tempDir();
  dataDirs.push(dataDir);
  const env = testEnv(dataDir, { INBOXD_WEBHOOK_RETRY_DELAYS: "1,1,1,1", INBOXD_WEBHOOK_TIMEOUT_MS: String(timeoutMs) });
  const app = openApp(loadConfig(env));
  const { apiKey } = seedOrganization(app);
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
  const { apiKey, start } = freshInstance();
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
  expect(second!.receivedAt - restartedAt).toBeLessThan(1000);
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
  const { apiKey, start } = freshInstance();
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
  expect(retry.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(timeoutMs + firstDelayMs - 100);
  await child.kill("SIGTERM");
}, 30_000);
