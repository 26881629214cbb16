// What bench/smtp-ingest's scripts share: Postfix's smtp-source and the message it sends, the
// reference servers of this folder in processes of their own, inboxd's settings, and what is read
// of a run (resident memory from /proc, stored messages).
import { Database } from "bun:sqlite";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { packagedRuntimeEnv, register, testEnv, type ApiClient } from "../../test/harness";
import type { startDnsServer } from "../../test/peers/dns-server";
import { benchMessage, senderDomain } from "./message";

export const recipient = "bench@inboxd.test";

/** An account on a started inboxd, and the recipient's inbox in it: the account's API key and the inbox's id. */
export async function benchAccount(api: ApiClient): Promise<{ apiKey: string; inboxId: string }> {
  const { apiKey } = await register(api);
  const inbox = await api.post("/v1/inboxes", { email: recipient }, apiKey.key);
  if (inbox.status !== 201) throw new Error(`creating the inbox: ${inbox.status} ${JSON.stringify(inbox.body)}`);
  return { apiKey: apiKey.key, inboxId: inbox.body.id };
}

export function ensureSmtpSource(): void {
  if (Bun.which("smtp-source") && Bun.which("smtp-sink")) return;
  console.log("installing Debian's postfix for smtp-source and smtp-sink (no mail system configured, no daemon started)");
  const install = Bun.spawnSync(["sh", "-c", "echo 'postfix postfix/main_mailer_type select No configuration' | debconf-set-selections && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postfix"], { stdout: "ignore", stderr: "inherit" });
  if (install.exitCode !== 0 || !Bun.which("smtp-source")) throw new Error("smtp-source is missing and postfix could not be installed (apt-get install postfix, as root)");
}

/** Resident memory of a process now (VmRSS), in MB. */
export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

/** The most VmRSS seen, sampled every 100 ms while `during` runs. */
export async function peakResident(pid: number, during: () => Promise<void>): Promise<number> {
  let peak = rssMb(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 100);
  try {
    await during();
  } finally {
    clearInterval(sampler);
  }
  return peak;
}

// This machine may be shared: beside a rate, the CPU time a server spent (all its threads, from
// /proc), which other load on the machine does not inflate much.
const clockTicks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim() || 100);
function cpuSeconds(statPath: string): number {
  const stat = readFileSync(statPath, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clockTicks; // utime and stime, fields 14 and 15
}

/** CPU seconds of a process by kind of thread: its event loop, its Workers, and the runtime's own by thread name (JIT, GC, I/O pool). */
export function cpuByThread(pid: number): Record<string, number> {
  const byKind: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    const kind = Number(tid) === pid ? "event loop" : comm === "Worker" ? "workers (analysis, WAL checkpoints)" : `runtime: ${comm}`;
    byKind[kind] = (byKind[kind] ?? 0) + cpuSeconds(`/proc/${pid}/task/${tid}/stat`);
  }
  return byKind;
}

/** A reference server of this folder in a child process, once it printed its port. */
export async function startReference(script: string, ...args: string[]) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, script), ...args], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  return { proc, port: Number(text.trim()) };
}

/** smtp-source sends `count` copies of `file` to 127.0.0.1:`port`; throws if it saw anything but success. */
export async function runSmtpSource(port: number, file: string, count: number, args: string[]): Promise<void> {
  const proc = Bun.spawn(["smtp-source", "-4", ...args, "-m", String(count), "-F", file, "-f", `news@${senderDomain}`, "-t", recipient, `127.0.0.1:${port}`], { stdout: "pipe", stderr: "pipe" });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`smtp-source failed (${code}): ${await new Response(proc.stderr).text()}`);
}

/** inboxd's settings in these benchmarks: as the packaged unit runs it, with the references' greeting wait and room for mode (b)'s connections. */
export function benchInboxdEnv(dataDir: string, dnsServer: string, engine: Record<string, string> = {}): Record<string, string> {
  return testEnv(dataDir, {
    ...packagedRuntimeEnv(),
    ...engine,
    INBOXD_DNS_SERVERS: dnsServer,
    // The references have neither, and mode (b) opens 100 connections from one address.
    INBOXD_SMTP_GREETING_DELAY_MS: "100",
    INBOXD_SMTP_MAX_CONNECTIONS: "1000",
    INBOXD_SMTP_MAX_CONNECTIONS_PER_IP: "1000",
    INBOXD_METRICS_TOKEN: metricsToken,
  });
}

const metricsToken = "bench-metrics";

/**
 * The longest and shortest waits between two looks at the inbound queue's depth. A scrape of the
 * metrics is work of the event loop's, taken from what is measured, so the scripts look seldom
 * while much is left; but a look every second made each figure end on a whole second after the
 * burst (catch-ups of 4.0, 5.0 and 6.1 s, an error of up to a tenth of these runs).
 */
const lookIntervalMs = { most: 1_000, least: 20 };

/**
 * Waits until inboxd's inbound queue is empty. Each wait is half the time the queue still needs
 * at the rate it drained since the last look, within lookIntervalMs: a few looks in all, the last
 * within tens of milliseconds of the end.
 */
export async function untilInboundQueueEmpty(httpPort: number): Promise<void> {
  let last = { depth: await inboundQueueDepth(httpPort), at: performance.now() };
  let wait = lookIntervalMs.most;
  while (last.depth > 0) {
    await Bun.sleep(wait);
    const now = { depth: await inboundQueueDepth(httpPort), at: performance.now() };
    const drainedPerMs = (last.depth - now.depth) / (now.at - last.at);
    wait = drainedPerMs > 0 ? Math.min(lookIntervalMs.most, Math.max(lookIntervalMs.least, now.depth / drainedPerMs / 2)) : lookIntervalMs.most;
    last = now;
  }
}

/**
 * Messages inboxd accepted and has not analysed and stored yet, from its metrics
 * (`inboxd_inbound_queue_depth`, a count of the queue's rows). The API tells whether the last
 * message shows only by paging past every stored message, which took a tenth of the event loop
 * from the analysis when asked every 200 ms: the scripts wait for 0 here, then ask the API once.
 */
export async function inboundQueueDepth(httpPort: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
  const depth = /^inboxd_inbound_queue_depth (\d+)$/m.exec(await response.text());
  if (!depth) throw new Error(`inboxd's metrics (${response.status}) have no inbound queue depth`);
  return Number(depth[1]);
}

/** Messages an inboxd data dir on SQLite holds (a count walks an index: not for a tight loop). */
export function storedMessages(dataDir: string): number {
  const db = new Database(join(dataDir, "inboxd.db"), { readonly: true });
  try {
    return db.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n;
  } finally {
    db.close();
  }
}

/** The bench message written to `dir` for smtp-source, with the sender's SPF, DMARC and DKIM records published on `dns`. */
export async function writeBenchMessage(dir: string, dns: Awaited<ReturnType<typeof startDnsServer>>) {
  const message = await benchMessage(recipient);
  const file = join(dir, "message.eml");
  writeFileSync(file, message.file);
  dns.set(senderDomain, "TXT", ["v=spf1 ip4:127.0.0.1 -all"]);
  dns.set(`_dmarc.${senderDomain}`, "TXT", ["v=DMARC1; p=reject"]);
  dns.set(message.dkimRecord.name, "TXT", [message.dkimRecord.value]);
  return { message, file };
}
