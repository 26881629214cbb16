// bench/smtp-ingest/catch-up: where inboxd's time goes while mail arrives and while it analyses
// the backlog after. smtp-source sends ./run.ts's mode (a) (20 reused sessions) to inboxd alone,
// run as the packaged unit runs it; printed for the burst, and for the catch-up from the burst's
// end until the inbound queue is empty: the rate, the CPU of inboxd's threads by kind as a share
// of one core, and how much of the whole machine stood idle (a pipeline that stalls leaves cores
// idle; one bound by CPU does not); then the resident memory idle and at most.
// Run: bun bench/smtp-ingest/catch-up.ts [messages, 10000]
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { startChildServer, tempDir } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";
import { benchAccount, benchInboxdEnv, cpuByThread, ensureSmtpSource, inboundQueueDepth, peakResident, untilInboundQueueEmpty, rssMb, runSmtpSource, storedMessages, writeBenchMessage } from "./peers";

const messages = Number(process.argv[2] ?? 10_000);

/** The machine's CPU time so far, idle and in all (jiffies, from /proc/stat). */
function machineCpu(): { idle: number; total: number } {
  const jiffies = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: jiffies[3]! + jiffies[4]!, total: jiffies.reduce((sum, n) => sum + n, 0) };
}

/** What a phase cost, from one reading of the counters to the next. */
function phase(pid: number) {
  const started = { at: performance.now(), threads: cpuByThread(pid), machine: machineCpu() };
  return () => {
    const seconds = (performance.now() - started.at) / 1000;
    const threads = Object.entries(cpuByThread(pid))
      .map(([kind, total]) => [kind, (100 * (total - (started.threads[kind] ?? 0))) / seconds] as const)
      .filter(([, percent]) => percent >= 1)
      .map(([kind, percent]) => `${kind} ${percent.toFixed(0)} %`);
    const machine = machineCpu();
    const idle = (100 * (machine.idle - started.machine.idle)) / (machine.total - started.machine.total);
    return { seconds, description: `CPU of one core: ${threads.join(", ")}; the machine ${idle.toFixed(0)} % idle` };
  };
}

ensureSmtpSource();
const work = tempDir("smtp-catch-up");
const dataDir = join(work, "data");
const dns = await startDnsServer();
const inboxd = await startChildServer(benchInboxdEnv(dataDir, dns.address), { command: [process.execPath, join(import.meta.dir, "../../src/main.ts")] });
try {
  const { file } = await writeBenchMessage(work, dns);
  await benchAccount(inboxd.api);
  const pid = inboxd.proc.pid;
  const idleMb = rssMb(pid);
  console.log(`catch-up: ${messages.toLocaleString("en-US")} messages over 20 reused sessions, ${navigator.hardwareConcurrency} cores, load average ${loadavg()[0]!.toFixed(1)}`);
  const peakMb = await peakResident(pid, async () => {
    const burst = phase(pid);
    await runSmtpSource(inboxd.smtpPort!, file, messages, ["-d", "-s", "20"]);
    const burstEnd = burst();
    const backlog = await inboundQueueDepth(inboxd.httpPort);
    console.log(`  burst:    ${burstEnd.seconds.toFixed(1)} s, ${Math.round(messages / burstEnd.seconds)} msg/s accepted; ${burstEnd.description}`);
    const catchUp = phase(pid);
    await untilInboundQueueEmpty(inboxd.httpPort);
    const caughtUp = catchUp();
    console.log(`  catch-up: ${backlog.toLocaleString("en-US")} left at the burst's end, ${caughtUp.seconds.toFixed(1)} s, ${Math.round(backlog / caughtUp.seconds)} msg/s analysed and stored; ${caughtUp.description}`);
    console.log(`  all: ${Math.round(messages / (burstEnd.seconds + caughtUp.seconds))} msg/s from the first message to the last stored`);
  });
  const stored = storedMessages(dataDir);
  if (stored !== messages) throw new Error(`inboxd stored ${stored} messages, expected ${messages}`);
  console.log(`  resident memory: idle ${idleMb.toFixed(0)} MB, at most ${peakMb.toFixed(0)} MB`);
} finally {
  await inboxd.kill("SIGTERM");
  await dns.close();
}
