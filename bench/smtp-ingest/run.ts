// bench/smtp-ingest: Postfix's smtp-source sends the same ~4 kB DKIM-signed multipart message to
// inboxd (which commits each one durably before its 250, then parses, authenticates, threads,
// indexes and stores it with its event on its inbound queue), and in the same run to Postfix's
// smtp-sink, to a bare smtp-server that discards, and to the issue's minimal prototype
// (simpleParser and one row with synchronous = FULL per message, before the 250).
// Two modes: (a) connections reused (smtp-source -d), 20 sessions; (b) one message per
// connection, 100 sessions. In mode (a) a 21st session times each end of data to its 250 (p50,
// p99), and inboxd's rate counts until every message is analysed and visible through the API.
// inboxd's resident memory is printed idle (after start, once its threads that start on demand have
// stopped, beside the bare smtp-server's) and loaded (the most seen during (a)).
// Installs Debian's postfix for smtp-source/smtp-sink when missing.
// Run: bun bench/smtp-ingest/run.ts [messages]   (BENCH_PROFILE=1: inboxd writes a CPU profile of
// its main thread, as Markdown and as a .cpuprofile for Chrome's DevTools)
import { mkdirSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startChildServer, tempDir } from "../../test/harness";
import { describeResident, resident, untilAtRest } from "../../test/hardening/resident-memory";
import { startDnsServer } from "../../test/peers/dns-server";
import { freePort, postmasterPid, processTreeCpuSeconds, waitForPort } from "../lib";
import { startPostgresCluster, type PostgresCluster } from "../../test/peers/postgres";
import { percentile, startLatencyProbe } from "./latency-probe";
import { senderDomain } from "./message";
import { benchAccount, benchInboxdEnv, cpuByThread, ensureSmtpSource, recipient, rssMb, runSmtpSource, startReference, writeBenchMessage, storedMessages, untilInboundQueueEmpty } from "./peers";

const messages = Number(process.argv[2] ?? 20_000);
const profileDir = join(tmpdir(), "inboxd-smtp-ingest-profile");
const warmUp = 1_000;
const modes = [
  { name: "(a) connections reused, 20 sessions", args: ["-d", "-s", "20"], target: 35 },
  { name: "(b) one message per connection, 100 sessions", args: ["-s", "100"], target: 90 },
];

type Target = { name: string; port: number; pid: number; databasePid?: number };

/** One smtp-source run against a target; throws if smtp-source saw anything but success. */
async function send(target: Target, file: string, count: number, args: string[]) {
  const cpuBefore = cpuOf(target);
  const started = performance.now();
  await runSmtpSource(target.port, file, count, args);
  const seconds = (performance.now() - started) / 1000;
  const cpuMicros = Object.entries(cpuOf(target)).map(([kind, total]) => [kind, ((total - (cpuBefore[kind] ?? 0)) * 1e6) / count] as const);
  return { rate: count / seconds, cpuMicros: cpuMicros.reduce((sum, [, micros]) => sum + micros, 0), byThread: cpuMicros };
}

function cpuOf(target: Target): Record<string, number> {
  const byKind = cpuByThread(target.pid);
  if (target.databasePid) byKind["PostgreSQL server"] = processTreeCpuSeconds(target.databasePid);
  return byKind;
}

/** `withAccount` false: a further node of a database that has the account and inbox already. */
async function startInboxd(dataDir: string, dnsServer: string, engine: Record<string, string> = {}, withAccount = true) {
  mkdirSync(dataDir, { recursive: true });
  const env = benchInboxdEnv(dataDir, dnsServer, engine);
  const profile = process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${profileDir}`] : [];
  const child = await startChildServer(env, { command: [process.execPath, ...profile, join(import.meta.dir, "../../src/main.ts")] });
  if (!withAccount) return { ...child, untilVisible: undefined };
  const { apiKey, inboxId } = await benchAccount(child.api);
  /** Once the inbound queue is empty: whether the API lists at least `count` messages in the inbox (the page holding the count-th has it). */
  const untilVisible = async (count: number) => {
    await untilInboundQueueEmpty(child.httpPort);
    const page = await child.api.get(`/v1/inboxes/${inboxId}/messages?per=1&page=${count}`, apiKey);
    if (page.status !== 200 || page.body.length !== 1) throw new Error(`the inbound queue is empty and message ${count} is not listed (${page.status})`);
  };
  return { ...child, untilVisible };
}

ensureSmtpSource();
const work = tempDir("smtp-ingest");
const dataDir = join(work, "data");
mkdirSync(dataDir);
const dns = await startDnsServer();
const sinkPort = await freePort();
const sink = Bun.spawn(["smtp-sink", "-u", "nobody", "-c", `127.0.0.1:${sinkPort}`, "1000"], { stdout: "ignore", stderr: "inherit" });
const bare = await startReference("bare-server.ts");
const prototypeDir = join(work, "prototype");
mkdirSync(prototypeDir);
const prototype = await startReference("prototype-server.ts", prototypeDir);
let inboxd: Awaited<ReturnType<typeof startInboxd>> | undefined;
// The same inboxd on PostgreSQL (a local cluster of this run's own, fsync on like SQLite's FULL), measured beside it.
let cluster: PostgresCluster | undefined;
let inboxdPostgres: Awaited<ReturnType<typeof startInboxd>> | undefined;
let secondNode: Awaited<ReturnType<typeof startInboxd>> | undefined;
try {
  const { message, file } = await writeBenchMessage(work, dns);
  inboxd = await startInboxd(dataDir, dns.address);
  cluster = await startPostgresCluster({ durable: true });
  // Every node of one database holds the same key.
  const onPostgres = { INBOXD_DATABASE_URL: await cluster.createDatabase("bench_ingest"), INBOXD_SECRET_KEY: Buffer.alloc(32, 1).toString("base64") };
  inboxdPostgres = await startInboxd(join(work, "data-postgres"), dns.address, onPostgres);
  await waitForPort(sinkPort);
  const targets: Target[] = [
    { name: "Postfix smtp-sink (C)", port: sinkPort, pid: sink.pid },
    { name: "bare smtp-server, discards", port: bare.port, pid: bare.proc.pid },
    { name: "prototype: parse, 1 row, FULL", port: prototype.port, pid: prototype.proc.pid },
    { name: "inboxd, stores durably", port: inboxd.smtpPort!, pid: inboxd.proc.pid },
    { name: "inboxd on PostgreSQL", port: inboxdPostgres.smtpPort!, pid: inboxdPostgres.proc.pid, databasePid: postmasterPid(cluster.dir) },
  ];
  const instanceOf = new Map([
    [targets[3]!, inboxd],
    [targets[4]!, inboxdPostgres],
  ]);
  // Idle: started, one account and inbox, nothing received yet, the threads that start on demand stopped.
  await untilAtRest(inboxd.proc.pid);
  const idle = { inboxd: resident(inboxd.proc.pid), bare: resident(bare.proc.pid) };
  for (const target of targets) await send(target, file, warmUp, modes[0].args);

  const load = () => loadavg().map((n) => n.toFixed(1)).join(" ");
  console.log(`smtp-ingest: ${messages.toLocaleString("en-US")} messages of ${message.file.length.toLocaleString("en-US")} bytes per run, smtp-source on loopback, ${navigator.hardwareConcurrency} cores, load average ${load()} at the start`);
  const expectedOf = new Map([...instanceOf.keys()].map((target) => [target, warmUp]));
  let loadedRss = 0;
  /** Mode (a)'s rate of inboxd on PostgreSQL, for the two-node run's ratio. */
  let postgresRate = 0;
  for (const [m, mode] of modes.entries()) {
    console.log(`  ${mode.name}`);
    const rates: number[] = [];
    let inboxdVisibleRate = 0;
    for (const target of targets) {
      const isInboxd = target === targets[3];
      const probe = m === 0 ? await startLatencyProbe(target.port, message.file, `probe@${senderDomain}`, recipient) : undefined;
      const sampler = isInboxd ? setInterval(() => (loadedRss = Math.max(loadedRss, rssMb(target.pid))), 100) : undefined;
      const started = performance.now();
      const { rate, cpuMicros, byThread } = await send(target, file, messages, mode.args);
      const delays = (await probe?.stop()) ?? [];
      rates.push(rate);
      console.log(`    ${target.name.padEnd(28)} ${Math.round(rate).toLocaleString("en-US").padStart(7)} msg/s   ${Math.round(cpuMicros).toLocaleString("en-US").padStart(5)} µs CPU per message${probe ? `   end of data → 250: p50 ${percentile(delays, 0.5).toFixed(1)} ms, p99 ${percentile(delays, 0.99).toFixed(1)} ms (${delays.length} probes)` : ""}`);
      const instance = instanceOf.get(target);
      if (instance) {
        const expected = expectedOf.get(target)! + messages + delays.length;
        expectedOf.set(target, expected);
        // Accepted is not yet analysed: the rate that matters to a reader of the API counts until the last one shows there.
        await instance.untilVisible!(expected);
        clearInterval(sampler);
        const visibleRate = (messages + delays.length) / ((performance.now() - started) / 1000);
        if (isInboxd) inboxdVisibleRate = visibleRate;
        else if (m === 0) postgresRate = visibleRate;
        console.log(`      of which ${byThread.map(([kind, micros]) => `${kind} ${Math.round(micros)} µs`).join(", ")}`);
        console.log(`      all analysed and visible through the API: ${Math.round(visibleRate).toLocaleString("en-US")} msg/s`);
      }
    }
    console.log(`    inboxd / bare smtp-server    ${((100 * rates[3]) / rates[1]).toFixed(0).padStart(6)} %   (target ≥ ${mode.target} %)`);
    console.log(`    prototype / bare smtp-server ${((100 * rates[2]) / rates[1]).toFixed(0).padStart(6)} %${m === 0 ? "   (the issue measured 26 % in mode (a))" : ""}`);
    if (m === 0) console.log(`    inboxd analysed and visible / prototype stored ${((100 * inboxdVisibleRate) / rates[2]).toFixed(0).padStart(4)} %   (target ≥ 100 %)`);
    console.log(`    inboxd on PostgreSQL / on SQLite ${((100 * rates[4]!) / rates[3]!).toFixed(0).padStart(3)} %   (accepted; both durable before the 250)`);
  }
  console.log(`  inboxd resident memory: idle ${describeResident(idle.inboxd)} beside the bare smtp-server's ${describeResident(idle.bare)} (target ≤ 80 MB for the executable), loaded ${loadedRss.toFixed(0)} MB at most during (a)`);
  console.log(`  load average ${load()} at the end`);
  const stored = storedMessages(dataDir);
  const expected = expectedOf.get(targets[3]!)!;
  if (stored !== expected) throw new Error(`inboxd stored ${stored} messages, expected ${expected}`);
  console.log(`  inboxd stored all ${stored.toLocaleString("en-US")} messages it accepted`);

  // Two nodes on the one PostgreSQL, each given half the sessions and messages of mode (a) at once.
  secondNode = await startInboxd(join(work, "data-postgres-2"), dns.address, onPostgres, false);
  const second: Target = { name: "second node", port: secondNode.smtpPort!, pid: secondNode.proc.pid };
  await send(second, file, warmUp, modes[0].args);
  const half = ["-d", "-s", "10"];
  const started = performance.now();
  const [one, two] = await Promise.all([send(targets[4]!, file, messages / 2, half), send(second, file, messages / 2, half)]);
  const accepted = messages / ((performance.now() - started) / 1000);
  const expectedOnPostgres = expectedOf.get(targets[4]!)! + warmUp + messages;
  await inboxdPostgres.untilVisible!(expectedOnPostgres);
  const visible = messages / ((performance.now() - started) / 1000);
  const cpuMicros = (one.cpuMicros + two.cpuMicros) / 2;
  console.log(`  two inboxd nodes on one PostgreSQL, (a) split over both (10 sessions each)`);
  console.log(`    ${Math.round(accepted).toLocaleString("en-US")} msg/s accepted, ${Math.round(visible).toLocaleString("en-US")} msg/s analysed and visible, ${Math.round(cpuMicros)} µs CPU per message (both nodes and the server)`);
  console.log(`    two nodes / one node (analysed and visible): ${(visible / postgresRate).toFixed(2)}×   (${navigator.hardwareConcurrency} cores shared by the nodes, PostgreSQL and smtp-source)`);
} finally {
  await secondNode?.kill("SIGTERM");
  await inboxd?.kill("SIGTERM");
  await inboxdPostgres?.kill("SIGTERM");
  cluster?.stop();
  if (process.env.BENCH_PROFILE) console.log(`  inboxd's CPU profile (.md and .cpuprofile): ${profileDir}`);
  sink.kill();
  bare.proc.kill();
  prototype.proc.kill();
  await dns.close();
  rmSync(work, { recursive: true, force: true });
}
