// bench/smtp-ingest/large-database: inboxd's resident memory under steady inbound mail once its
// database holds many messages (the issue asks for at most 150 MB after 1 M). The stored
// messages are seeded through the store (the same rows, threads, search index and triggers as
// received mail; ~2 kB of text each, bench/search/seed.ts), then inboxd starts on that database
// as the packaged unit runs it and smtp-source sends mode (a) of ./run.ts (20 reused sessions);
// in the same run, a bare smtp-server that discards takes the same load. Printed: inboxd's
// resident memory idle on the large database, the most seen until every sent message is stored,
// and the reference's.
// Seeding 1 M takes about 16 minutes on 2 cores; given a directory, the seeded data dir is kept
// there and used again by the next run with the same directory.
// Run: bun bench/smtp-ingest/large-database.ts [stored messages, 1000000] [sent, 20000] [data dir to keep]
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { openApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { insertInbox } from "../../src/inboxes/service";
import { createStore } from "../../src/store/sqlite/index";
import { describeResident, resident, untilAtRest } from "../../test/hardening/resident-memory";
import { seedOrganization, startChildServer, tempDir, testEnv } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";
import { corpus, seedMessages } from "../search/seed";
import { benchInboxdEnv, ensureSmtpSource, peakResident, recipient, runSmtpSource, startReference, writeBenchMessage, storedMessages } from "./peers";

const stored = Number(process.argv[2] ?? 1_000_000);
const sent = Number(process.argv[3] ?? 20_000);
const keptDataDir = process.argv[4];
const sessions = ["-d", "-s", "20"];

async function seed(dataDir: string): Promise<void> {
  const app = await openApp(loadConfig(testEnv(dataDir)));
  try {
    const { organizationId } = await seedOrganization(app);
    const created = await app.store.transaction((tx) => insertInbox(app, tx, organizationId, { email: recipient }));
    const inbox = (await app.store.inboxes.findByEmail(created.email))!;
    const sqlite = new Database(join(dataDir, "inboxd.db"), { strict: true });
    // Seeding only: the per-commit fsync is skipped.
    sqlite.exec("PRAGMA synchronous = OFF");
    const started = performance.now();
    await seedMessages({ store: createStore(sqlite), clock: app.clock }, inbox, stored, corpus(), (done) => {
      if (done % 100_000 === 0) process.stderr.write(`  seeded ${done.toLocaleString("en-US")}\n`);
    });
    sqlite.close();
    console.log(`  seeded ${stored.toLocaleString("en-US")} messages in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    app.close();
  }
}

ensureSmtpSource();
const work = tempDir("smtp-ingest-large");
const dataDir = keptDataDir ?? join(work, "data");
const seeded = existsSync(join(dataDir, "inboxd.db"));
mkdirSync(dataDir, { recursive: true });
const dns = await startDnsServer();
const bare = await startReference("bare-server.ts");
let inboxd: Awaited<ReturnType<typeof startChildServer>> | undefined;
try {
  const { file } = await writeBenchMessage(work, dns);
  console.log(`smtp-ingest on a large database: ${(seeded ? storedMessages(dataDir) : stored).toLocaleString("en-US")} messages stored, then ${sent.toLocaleString("en-US")} sent over 20 reused sessions; load average ${loadavg()[0]!.toFixed(1)}`);
  if (!seeded) await seed(dataDir);
  const before = storedMessages(dataDir);
  inboxd = await startChildServer(benchInboxdEnv(dataDir, dns.address));
  // The integrity check at start reads every page of the database on a thread of its own.
  await untilAtRest(inboxd.proc.pid, 600_000);
  const idle = resident(inboxd.proc.pid);
  const bareIdle = resident(bare.proc.pid);
  const target = before + sent;
  const started = performance.now();
  const loaded = await peakResident(inboxd.proc.pid, async () => {
    await runSmtpSource(inboxd!.smtpPort!, file, sent, sessions);
    while (storedMessages(dataDir) < target) await Bun.sleep(1000);
  });
  const seconds = (performance.now() - started) / 1000;
  const bareLoaded = await peakResident(bare.proc.pid, () => runSmtpSource(bare.port, file, sent, sessions));
  console.log(`  inboxd idle on the large database: ${describeResident(idle)}; the bare smtp-server idle: ${describeResident(bareIdle)}`);
  console.log(`  under steady load, the most resident: inboxd ${loaded.toFixed(0)} MB (target ≤ 150 MB), the bare smtp-server ${bareLoaded.toFixed(0)} MB`);
  console.log(`  inboxd stored all ${sent.toLocaleString("en-US")} in ${seconds.toFixed(0)} s (${Math.round(sent / seconds)} msg/s analysed and stored); after: ${describeResident(resident(inboxd.proc.pid))}; load average ${loadavg()[0]!.toFixed(1)}`);
} finally {
  await inboxd?.kill("SIGTERM");
  bare.proc.kill();
  await dns.close();
  rmSync(work, { recursive: true, force: true });
}
