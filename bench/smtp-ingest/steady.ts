// bench/smtp-ingest/steady: inboxd's resident memory under mail sent at a steady pace, beside a bare
// smtp-server given the same pace in the same run (the issue asks for at most 150 MB under steady
// load; ./run.ts and ./large-database.ts measure it under a burst as fast as the server takes it).
// Each second smtp-source sends `rate` messages over up to 20 reused sessions; after `seconds`
// seconds at one rate the script waits until inboxd has stored all it was sent, then goes on to the
// next rate. Printed per rate: the pace reached, and the most resident (VmRSS every 100 ms) of
// inboxd, run from source as ./run.ts runs it with the packaged unit's settings, and of the bare
// smtp-server; then inboxd's resident memory once all is stored.
// Run: bun bench/smtp-ingest/steady.ts [rates, 100,300,1000] [seconds per rate, 30]
import { loadavg } from "node:os";
import { join } from "node:path";
import { startChildServer, tempDir } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";
import { benchAccount, benchInboxdEnv, ensureSmtpSource, peakResident, rssMb, runSmtpSource, startReference, storedMessages, writeBenchMessage } from "./peers";

const rates = (process.argv[2] ?? "100,300,1000").split(",").map(Number);
const seconds = Number(process.argv[3] ?? 30);

/** `rate` messages a second for `seconds` seconds; the pace reached, in msg/s (under `rate` when a second's batch took longer). */
async function atPace(port: number, file: string, rate: number): Promise<number> {
  const started = performance.now();
  for (let second = 0; second < seconds; second++) {
    const batchStarted = performance.now();
    await runSmtpSource(port, file, rate, ["-d", "-s", String(Math.min(20, rate))]);
    await Bun.sleep(Math.max(0, 1000 - (performance.now() - batchStarted)));
  }
  return (rate * seconds) / ((performance.now() - started) / 1000);
}

ensureSmtpSource();
const work = tempDir("smtp-steady");
const dataDir = join(work, "data");
const dns = await startDnsServer();
const bare = await startReference("bare-server.ts");
const inboxd = await startChildServer(benchInboxdEnv(dataDir, dns.address), { command: [process.execPath, join(import.meta.dir, "../../src/main.ts")] });
try {
  const { file } = await writeBenchMessage(work, dns);
  await benchAccount(inboxd.api);
  console.log(`smtp-ingest at a steady pace: ${rates.join(", ")} msg/s, ${seconds} s each, ${navigator.hardwareConcurrency} cores, load average ${loadavg()[0]!.toFixed(1)}`);
  console.log(`  idle: inboxd ${rssMb(inboxd.proc.pid).toFixed(0)} MB, the bare smtp-server ${rssMb(bare.proc.pid).toFixed(0)} MB`);
  let sent = 0;
  for (const rate of rates) {
    sent += rate * seconds;
    let pace = 0;
    const inboxdMost = await peakResident(inboxd.proc.pid, async () => {
      pace = await atPace(inboxd.smtpPort!, file, rate);
      while (storedMessages(dataDir) < sent) await Bun.sleep(200);
    });
    const bareMost = await peakResident(bare.proc.pid, () => atPace(bare.port, file, rate).then(() => undefined));
    console.log(`  ${rate} msg/s (reached ${pace.toFixed(0)}): the most resident, inboxd ${inboxdMost.toFixed(0)} MB (target ≤ 150 MB), the bare smtp-server ${bareMost.toFixed(0)} MB; inboxd once all stored ${rssMb(inboxd.proc.pid).toFixed(0)} MB`);
  }
  console.log(`  load average ${loadavg()[0]!.toFixed(1)} at the end`);
} finally {
  await inboxd.kill("SIGTERM");
  bare.proc.kill();
  await dns.close();
}
