// bench/webhooks: events fanned out through the webhook queue to a local receiver, every try
// recorded, beside a bare fetch loop with the same concurrency against the same receiver, in the
// same run. The receiver runs in its own process. Run: bun bench/webhooks/run.ts [events] [concurrency]
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { envelopeBody } from "../../src/webhooks/envelope";
import { startWebhookQueue } from "../../src/webhooks/queue";
import { createWebhook } from "../../src/webhooks/service";
import { seedOrganization, tempDir, testEnv } from "../../test/harness";

const eventCount = Number(process.argv[2] ?? 20_000);
const concurrency = Number(process.argv[3] ?? 64);
const warmUp = 2_000;

// A received message as message events carry it (about 1 kB).
const message = {
  id: "msg_0123456789abcdef01234567",
  _id: "msg_0123456789abcdef01234567",
  organizationId: "org_0123456789abcdef01234567",
  inboxId: "inb_0123456789abcdef01234567",
  threadId: "thr_0123456789abcdef01234567",
  from: "Alice Example <alice@example.com>",
  to: ["support@inboxd.test"],
  cc: [],
  bcc: [],
  subject: "Order #4711: where is my parcel?",
  text: "Hello,\n\nmy order #4711 was due on Monday and has not arrived yet. Could you look into it?\n\nThanks,\nAlice\n".repeat(4),
  labels: [],
  status: "received",
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
};

async function startReceiver() {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "receiver.ts")], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  const url = `http://127.0.0.1:${Number(text.trim())}`;
  return { proc, url, count: async () => Number(await (await fetch(`${url}/count`)).text()) };
}

/** The reference: `fetch` POSTs of the same body, `concurrency` at a time, nothing recorded. */
async function bareFetchLoop(url: string, requests: number): Promise<number> {
  const body = envelopeBody({ id: "evt_bench", type: "message.received", createdAt: 0, inboxId: message.inboxId, messageId: message.id, payload: JSON.stringify(message) });
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < requests) {
        sent++;
        const response = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json", "user-agent": "Service-Webhook/1.0" } });
        await response.arrayBuffer();
      }
    }),
  );
  return requests / ((performance.now() - started) / 1000);
}

/** inboxd: events written with their fan-out, then the queue until every outcome is recorded. */
async function throughQueue(url: string, events: number) {
  const dataDir = tempDir("inboxd-bench");
  try {
    const env = testEnv(dataDir, { INBOXD_WEBHOOK_CONCURRENCY: String(concurrency), INBOXD_WEBHOOK_CONCURRENCY_PER_URL: String(concurrency) });
    const app = openApp(loadConfig(env));
    const { organizationId } = seedOrganization(app);
    await createWebhook(app, organizationId, { url: `${url}/hook`, events: ["message.received"] });
    const writeStarted = performance.now();
    app.store.transaction(() => {
      for (let i = 0; i < events; i++) app.store.events.emit({ organizationId, type: "message.received", inboxId: message.inboxId, messageId: message.id, payload: message }, app.clock.now());
    });
    const writeSeconds = (performance.now() - writeStarted) / 1000;
    const queue = startWebhookQueue(app);
    const started = performance.now();
    await queue.runDueNow();
    const seconds = (performance.now() - started) / 1000;
    await queue.stop();
    const recorded = app.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM webhook_attempts WHERE success = 1 AND finished_at IS NOT NULL").get()!.n;
    const succeeded = app.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'succeeded'").get()!.n;
    app.close();
    if (recorded !== events || succeeded !== events) throw new Error(`expected ${events} recorded successes, got ${recorded} attempts and ${succeeded} deliveries`);
    return { perSecond: events / seconds, writePerSecond: events / writeSeconds };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const receiver = await startReceiver();
try {
  await bareFetchLoop(receiver.url, warmUp);
  await throughQueue(receiver.url, warmUp);
  const before = await receiver.count();
  const bare = await bareFetchLoop(receiver.url, eventCount);
  const queued = await throughQueue(receiver.url, eventCount);
  const received = (await receiver.count()) - before;
  if (received !== 2 * eventCount) throw new Error(`the receiver counted ${received} requests, expected ${2 * eventCount}`);
  const round = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log(`webhooks: ${eventCount.toLocaleString("en-US")} events, concurrency ${concurrency}, receiver on loopback in its own process`);
  console.log(`  bare fetch loop (reference)       ${round(bare).padStart(8)} POSTs/s`);
  console.log(`  inboxd queue, every try recorded  ${round(queued.perSecond).padStart(8)} deliveries/s  (${((100 * queued.perSecond) / bare).toFixed(0)}% of the reference; target 25%)`);
  console.log(`  events written with their fan-out ${round(queued.writePerSecond).padStart(8)} events/s (one transaction)`);
} finally {
  receiver.proc.kill();
}
