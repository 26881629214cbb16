// bench/webhooks: events fanned out through the webhook queue to a local receiver, every try
// recorded, beside a bare fetch loop with the same concurrency against the same receiver, in the
// same run. The receiver runs in its own process and serves one URL per webhook (16), so that the
// queue runs with its default limits: 64 requests at once, 4 per URL. The queue runs twice: with
// the receiver's address in the URLs, and with a host name per webhook as in production, which the
// tries resolve through a DNS server on loopback (INBOXD_DNS_SERVERS) and check.
// Run: bun bench/webhooks/run.ts [events=20000]
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openApp } from "../../src/app";
import { loadConfig, settings } from "../../src/config";
import { envelopeBody } from "../../src/webhooks/envelope";
import { pinnedPost } from "../../src/webhooks/pinned-fetch";
import { startWebhookQueue } from "../../src/webhooks/queue";
import { createWebhook } from "../../src/webhooks/service";
import { closeDatabaseOf, databaseOf, seedOrganization, tempDir, testEnv } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";

const eventCount = Number(process.argv[2] ?? 20_000);
const webhookCount = 16;
const concurrency = Number(settings.webhookConcurrency.default);
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

const body = envelopeBody({ id: "evt_bench", type: "message.received", createdAt: 0, inboxId: message.inboxId, messageId: message.id, payload: JSON.stringify(message) });
const headers = { "content-type": "application/json", "user-agent": "Service-Webhook/1.0" };
const hookUrl = (base: string, n: number) => `${base}/hook/${n % webhookCount}`;
/** Webhook n's host name, which the benchmark's DNS server resolves to the receiver's address. */
const hookHost = (n: number) => `hook-${n % webhookCount}.bench.test`;

/** `requests` POSTs by `concurrency` loops, spread over the webhook URLs; requests per second. */
async function loop(requests: number, post: (n: number) => Promise<void>): Promise<number> {
  let sent = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (sent < requests) await post(sent++);
  }));
  return requests / ((performance.now() - started) / 1000);
}

/** The reference: plain `fetch` POSTs of the same body, nothing checked or recorded. */
const bareFetchLoop = (base: string, requests: number) =>
  loop(requests, async (n) => {
    await (await fetch(hookUrl(base, n), { method: "POST", body, headers })).arrayBuffer();
  });

/** The queue's transport alone: pinnedPost (pooled connections, body capped), nothing signed or recorded. */
const pinnedPostLoop = (base: string, requests: number) =>
  loop(requests, async (n) => {
    await pinnedPost({ url: new URL(hookUrl(base, n)), address: "127.0.0.1", headers, body, timeoutMs: 5000 });
  });

/** inboxd: events written with their fan-out, then the queue until every outcome is recorded. */
async function throughQueue(urlOf: (n: number) => string, events: number, env: Record<string, string> = {}) {
  const dataDir = tempDir("inboxd-bench");
  try {
    const app = await openApp(loadConfig(testEnv(dataDir, env)));
    const organizations: string[] = [];
    for (let n = 0; n < webhookCount; n++) {
      const { organizationId } = await seedOrganization(app);
      await createWebhook(app, organizationId, { url: urlOf(n), events: ["message.received"] });
      organizations.push(organizationId);
    }
    const writeStarted = performance.now();
    await app.store.transaction(async (tx) => {
      for (let i = 0; i < events; i++) {
        await tx.events.emit({ organizationId: organizations[i % webhookCount]!, type: "message.received", inboxId: message.inboxId, messageId: message.id, payload: message }, app.clock.now());
      }
    });
    const writeSeconds = (performance.now() - writeStarted) / 1000;
    const queue = startWebhookQueue(app);
    const started = performance.now();
    await queue.runDueNow();
    const seconds = (performance.now() - started) / 1000;
    await queue.stop();
    const recorded = databaseOf(app).query<{ n: number }, []>("SELECT count(*) AS n FROM webhook_attempts WHERE success = 1 AND finished_at IS NOT NULL").get()!.n;
    const succeeded = databaseOf(app).query<{ n: number }, []>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'succeeded'").get()!.n;
    closeDatabaseOf(app);
    app.close();
    if (recorded !== events || succeeded !== events) throw new Error(`expected ${events} recorded successes, got ${recorded} attempts and ${succeeded} deliveries`);
    return { perSecond: events / seconds, writePerSecond: events / writeSeconds };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const receiver = await startReceiver();
const dns = await startDnsServer();
try {
  for (let n = 0; n < webhookCount; n++) dns.set(hookHost(n), "A", ["127.0.0.1"]);
  const byAddress = (n: number) => hookUrl(receiver.url, n);
  const byName = (n: number) => hookUrl(receiver.url.replace("127.0.0.1", hookHost(n)), n);
  const namedEnv = { INBOXD_DNS_SERVERS: dns.address };
  await bareFetchLoop(receiver.url, warmUp);
  await throughQueue(byAddress, warmUp);
  const before = await receiver.count();
  const bare = await bareFetchLoop(receiver.url, eventCount);
  const queued = await throughQueue(byAddress, eventCount);
  const named = await throughQueue(byName, eventCount, namedEnv);
  const pinned = await pinnedPostLoop(receiver.url, eventCount);
  const received = (await receiver.count()) - before;
  if (received !== 4 * eventCount) throw new Error(`the receiver counted ${received} requests, expected ${4 * eventCount}`);
  const rate = (n: number) => Math.round(n).toLocaleString("en-US").padStart(8);
  const share = (n: number) => `${((100 * n) / bare).toFixed(0)}% of the reference`;
  console.log(`webhooks: ${eventCount.toLocaleString("en-US")} events to ${webhookCount} webhook URLs, ${concurrency} requests at once, receiver on loopback in its own process`);
  console.log(`  bare fetch loop (reference)            ${rate(bare)} POSTs/s`);
  console.log(`  pinnedPost loop (queue's transport)    ${rate(pinned)} POSTs/s       (${share(pinned)})`);
  console.log(`  inboxd queue, every try recorded       ${rate(queued.perSecond)} deliveries/s  (${share(queued.perSecond)}; target 25%)`);
  console.log(`  the same, URLs naming hosts (DNS)      ${rate(named.perSecond)} deliveries/s  (${share(named.perSecond)}; ${dns.queries.length} DNS queries)`);
  console.log(`  events written with their fan-out      ${rate(queued.writePerSecond)} events/s      (one transaction)`);
} finally {
  receiver.proc.kill();
  await dns.close();
}
