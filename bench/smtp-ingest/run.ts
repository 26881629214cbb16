// bench/smtp-ingest: Postfix's smtp-source sends the same ~4 kB DKIM-signed multipart message to
// inboxd (which parses, authenticates, threads, indexes and durably stores each one with its
// event), and in the same run to Postfix's smtp-sink, to a bare smtp-server that discards, and to
// the issue's minimal prototype (simpleParser and one row with synchronous = FULL per message).
// Two modes: (a) connections reused (smtp-source -d), 20 sessions; (b) one message per
// connection, 100 sessions. Installs Debian's postfix for smtp-source/smtp-sink when missing.
// Run: bun bench/smtp-ingest/run.ts [messages]   (BENCH_PROFILE=1: inboxd writes a CPU profile of
// its main thread, as Markdown and as a .cpuprofile for Chrome's DevTools)
import { Database } from "bun:sqlite";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { register, startChildServer, tempDir, testEnv } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";
import { freePort, waitForPort } from "../lib";
import { benchMessage, senderDomain } from "./message";

const messages = Number(process.argv[2] ?? 20_000);
const profileDir = join(tmpdir(), "inboxd-smtp-ingest-profile");
const warmUp = 1_000;
const recipient = "bench@inboxd.test";
const modes = [
  { name: "(a) connections reused, 20 sessions", args: ["-d", "-s", "20"], target: 35 },
  { name: "(b) one message per connection, 100 sessions", args: ["-s", "100"], target: 90 },
];

function ensureSmtpSource(): void {
  if (Bun.which("smtp-source") && Bun.which("smtp-sink")) return;
  console.log("installing Debian's postfix for smtp-source and smtp-sink (no mail system configured, no daemon started)");
  const install = Bun.spawnSync(["sh", "-c", "echo 'postfix postfix/main_mailer_type select No configuration' | debconf-set-selections && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postfix"], { stdout: "ignore", stderr: "inherit" });
  if (install.exitCode !== 0 || !Bun.which("smtp-source")) throw new Error("smtp-source is missing and postfix could not be installed (apt-get install postfix, as root)");
}

type Target = { name: string; port: number; pid: number };

// This machine may be shared: beside the rate, the CPU time each server spent per message (all
// its threads, from /proc), which other load on the machine does not inflate much.
const clockTicks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim() || 100);
function cpuSeconds(statPath: string): number {
  const stat = readFileSync(statPath, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clockTicks; // utime and stime, fields 14 and 15
}

/** CPU seconds of a process by kind of thread: its event loop, its Workers, and the runtime's own by thread name (JIT, GC, I/O pool). */
function cpuByThread(pid: number): Record<string, number> {
  const byKind: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    const kind = Number(tid) === pid ? "event loop" : comm === "Worker" ? "workers (analysis, WAL checkpoints)" : `runtime: ${comm}`;
    byKind[kind] = (byKind[kind] ?? 0) + cpuSeconds(`/proc/${pid}/task/${tid}/stat`);
  }
  return byKind;
}

/** One smtp-source run against a target; throws if smtp-source saw anything but success. */
async function send(target: Target, file: string, count: number, args: string[]) {
  const cpuBefore = cpuByThread(target.pid);
  const started = performance.now();
  const proc = Bun.spawn(["smtp-source", "-4", ...args, "-m", String(count), "-F", file, "-f", `news@${senderDomain}`, "-t", recipient, `127.0.0.1:${target.port}`], { stdout: "pipe", stderr: "pipe" });
  const code = await proc.exited;
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`smtp-source failed (${code}): ${await new Response(proc.stderr).text()}`);
  const cpuMicros = Object.entries(cpuByThread(target.pid)).map(([kind, total]) => [kind, ((total - (cpuBefore[kind] ?? 0)) * 1e6) / count] as const);
  return { rate: count / seconds, cpuMicros: cpuMicros.reduce((sum, [, micros]) => sum + micros, 0), byThread: cpuMicros };
}

/** A reference server of this folder in a child process, once it printed its port. */
async function startReference(script: string, ...args: string[]) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, script), ...args], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  return { proc, port: Number(text.trim()) };
}

async function startInboxd(dataDir: string, dnsServer: string) {
  const env = testEnv(dataDir, {
    INBOXD_DNS_SERVERS: dnsServer,
    // The references have neither, and mode (b) opens 100 connections from one address.
    INBOXD_SMTP_GREETING_DELAY_MS: "100",
    INBOXD_SMTP_MAX_CONNECTIONS: "1000",
    INBOXD_SMTP_MAX_CONNECTIONS_PER_IP: "1000",
  });
  const profile = process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${profileDir}`] : [];
  const child = await startChildServer(env, { command: [process.execPath, ...profile, join(import.meta.dir, "../../src/main.ts")] });
  const { apiKey } = await register(child.api);
  const inbox = await child.api.post("/v1/inboxes", { email: recipient }, apiKey.key);
  if (inbox.status !== 201) throw new Error(`creating the inbox: ${inbox.status} ${JSON.stringify(inbox.body)}`);
  return child;
}

function storedMessages(dataDir: string): number {
  const db = new Database(join(dataDir, "inboxd.db"), { readonly: true });
  try {
    return db.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n;
  } finally {
    db.close();
  }
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
try {
  const message = await benchMessage(recipient);
  const file = join(work, "message.eml");
  writeFileSync(file, message.file);
  dns.set(senderDomain, "TXT", ["v=spf1 ip4:127.0.0.1 -all"]);
  dns.set(`_dmarc.${senderDomain}`, "TXT", ["v=DMARC1; p=reject"]);
  dns.set(message.dkimRecord.name, "TXT", [message.dkimRecord.value]);
  inboxd = await startInboxd(dataDir, dns.address);
  await waitForPort(sinkPort);
  const targets: Target[] = [
    { name: "Postfix smtp-sink (C)", port: sinkPort, pid: sink.pid },
    { name: "bare smtp-server, discards", port: bare.port, pid: bare.proc.pid },
    { name: "prototype: parse, 1 row, FULL", port: prototype.port, pid: prototype.proc.pid },
    { name: "inboxd, stores durably", port: inboxd.smtpPort!, pid: inboxd.proc.pid },
  ];
  for (const target of targets) await send(target, file, warmUp, modes[0].args);

  const load = () => loadavg().map((n) => n.toFixed(1)).join(" ");
  console.log(`smtp-ingest: ${messages.toLocaleString("en-US")} messages of ${message.file.length.toLocaleString("en-US")} bytes per run, smtp-source on loopback, ${navigator.hardwareConcurrency} cores, load average ${load()} at the start`);
  let expected = warmUp;
  for (const mode of modes) {
    console.log(`  ${mode.name}`);
    const rates: number[] = [];
    for (const target of targets) {
      const { rate, cpuMicros, byThread } = await send(target, file, messages, mode.args);
      rates.push(rate);
      console.log(`    ${target.name.padEnd(28)} ${Math.round(rate).toLocaleString("en-US").padStart(7)} msg/s   ${Math.round(cpuMicros).toLocaleString("en-US").padStart(5)} µs CPU per message`);
      if (target === targets[3]) console.log(`      of which ${byThread.map(([kind, micros]) => `${kind} ${Math.round(micros)} µs`).join(", ")}`);
    }
    expected += messages;
    console.log(`    inboxd / bare smtp-server    ${((100 * rates[3]) / rates[1]).toFixed(0).padStart(6)} %   (target ≥ ${mode.target} %)`);
    console.log(`    prototype / bare smtp-server ${((100 * rates[2]) / rates[1]).toFixed(0).padStart(6)} %   (the issue measured 26 % in mode (a))`);
  }
  console.log(`  load average ${load()} at the end`);
  const stored = storedMessages(dataDir);
  if (stored !== expected) throw new Error(`inboxd stored ${stored} messages, expected ${expected}`);
  console.log(`  inboxd stored all ${stored.toLocaleString("en-US")} messages it accepted`);
} finally {
  await inboxd?.kill("SIGTERM");
  if (process.env.BENCH_PROFILE) console.log(`  inboxd's CPU profile (.md and .cpuprofile): ${profileDir}`);
  sink.kill();
  bare.proc.kill();
  prototype.proc.kill();
  await dns.close();
  rmSync(work, { recursive: true, force: true });
}
