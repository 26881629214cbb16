// bench/outbound: messages queued through the HTTP API and delivered by inboxd's outbound queue
// (DKIM RSA + Ed25519 signing and queue bookkeeping included) to a local SMTP sink, beside
// nodemailer sending the same messages straight to the same sink, in the same run: unsigned, and
// DKIM-signed by its own `dkim` option with the same RSA key (nodemailer signs RSA only; the
// Ed25519 signature costs a twentieth of the RSA one). The ratio to the signed one is the queue's
// own overhead. All use 4 connections (INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN's default) to the
// one destination, and reuse them for many messages.
//
//   bun bench/outbound/run.ts            (BENCH_MESSAGES=5000 by default; INBOXD_DKIM_RSA=builtin
//                                         signs RSA with node:crypto instead of OpenSSL 3)
//
// The sink is Postfix's smtp-sink (a separate C process) when it is installed, else the test
// suite's smtp-server sink in a child process: never in this process, so it takes no CPU from
// the two senders measured.
//
// Beside each rate it prints the CPU time per message of this process (Linux), on the main thread
// and on the others (DKIM signing threads, the runtime's own): wall-clock rates swing with what else
// a shared machine runs, CPU per message much less, and it shows where the difference comes from.
import { readFileSync } from "node:fs";
import nodemailer from "nodemailer";
import { rsaSignerName } from "../../src/dkim/sign";
import { startOutboundQueue, type OutboundQueue } from "../../src/outbound/queue";
import { createSigner, defaultSigningThreads } from "../../src/outbound/sign-pool";
import { databaseOf, register, startTestServer } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";
import { freePort, waitForPort } from "../lib";

const COUNT = Number(process.env.BENCH_MESSAGES ?? 5000);
const threads = defaultSigningThreads();
const CONNECTIONS = 4;
const API_CONCURRENCY = 16;
const BODY = "Quarterly numbers attached below.\n".repeat(20);

async function startSink(): Promise<{ port: number; kind: string; stop(): void }> {
  const smtpSink = Bun.which("smtp-sink", { PATH: `${process.env.PATH}:/usr/sbin` });
  if (smtpSink) {
    const port = await freePort();
    const child = Bun.spawn([smtpSink, "-u", "nobody", `127.0.0.1:${port}`, "256"], { stdout: "ignore", stderr: "ignore" });
    await waitForPort(port);
    return { port, kind: "Postfix smtp-sink", stop: () => child.kill() };
  }
  const script = `import { startSmtpSink } from ${JSON.stringify(`${import.meta.dir}/../../test/peers/smtp-sink.ts`)}; console.log((await startSmtpSink()).port);`;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "ignore" });
  const port = await firstLineNumber(child.stdout as ReadableStream<Uint8Array>);
  return { port, kind: "smtp-server sink (child process)", stop: () => child.kill() };
}

async function firstLineNumber(stream: ReadableStream<Uint8Array>): Promise<number> {
  let text = "";
  for await (const chunk of stream) {
    text += new TextDecoder().decode(chunk);
    if (text.includes("\n")) break;
  }
  return Number(text.trim());
}

const rate = (count: number, ms: number) => (count / (ms / 1000)).toFixed(0);

/**
 * CPU milliseconds this process spent so far: in all (finished threads included, such as signing
 * threads a stopped queue ended) and on its main thread (/proc, Linux only).
 */
function cpuMs(): { all: number; main: number } | undefined {
  try {
    // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks (100 per second).
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    const { user, system } = process.cpuUsage();
    return { all: (user + system) / 1000, main: (Number(fields[11]) + Number(fields[12])) * 10 };
  } catch {
    return undefined;
  }
}

/** Runs `phase` and measures it: wall milliseconds, and CPU per message as text. */
async function measure(phase: () => Promise<unknown>): Promise<{ ms: number; cpu: string }> {
  const cpuBefore = cpuMs();
  const start = performance.now();
  await phase();
  const ms = performance.now() - start;
  const cpuAfter = cpuMs();
  if (!cpuBefore || !cpuAfter) return { ms, cpu: "" };
  const perMessage = (total: number) => (total / COUNT).toFixed(2);
  const main = cpuAfter.main - cpuBefore.main;
  return { ms, cpu: `CPU ${perMessage(main)} ms/message on the main thread, ${perMessage(cpuAfter.all - cpuBefore.all - main)} on the others` };
}

const sink = await startSink();
const dns = await startDnsServer();
dns.set("sink.test", "MX", [{ exchange: "mx.sink.test", priority: 10 }]);
dns.set("mx.sink.test", "A", ["127.0.0.1"]);
const server = await startTestServer({
  env: {
    INBOXD_DNS_SERVERS: dns.address,
    INBOXD_OUTBOUND_PORT: String(sink.port),
    INBOXD_SEND_LIMIT: String(COUNT * 10),
    INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN: String(CONNECTIONS),
    INBOXD_DKIM_RSA: process.env.INBOXD_DKIM_RSA ?? "auto",
  },
});
const { app } = server;
const account = await register(server.api);

// 1. Queue every message through the API with the worker stopped, so the delivery phase is measured alone.
const servedQueue = server.running.parts.find((part) => part.name === "outbound") as OutboundQueue;
await servedQueue.stop();
const ids: string[] = [];
const queueStart = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: API_CONCURRENCY }, async () => {
    while (next < COUNT) {
      const i = next++;
      const res = await server.api.request("POST", `/v1/inboxes/${account.inbox.id}/messages/send`, {
        token: account.apiKey.key,
        body: { to: [`rcpt${i}@sink.test`], subject: `Report ${i}`, text: BODY, html: `<pre>${BODY}</pre>` },
      });
      if (res.status !== 201) throw new Error(`send ${i}: ${res.status} ${JSON.stringify(res.body)}`);
      ids.push(res.body.id);
    }
  }),
);
const queueMs = performance.now() - queueStart;

// 2. The reference: nodemailer's pooled SMTP transport, the same raw messages and envelopes, straight to the sink.
const messages = await Promise.all(
  ids.map(async (id) => {
    const delivery = (await app.store.messages.deliveriesOf([id]))[0]!;
    return { raw: (await app.store.messages.rawSource(id))!, envelope: { from: `bounces+${delivery.id}@${app.config.hostname}`, to: [delivery.recipient] } };
  }),
);
const transportOptions = { pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity, host: "127.0.0.1", port: sink.port, secure: false, ignoreTLS: true } as const;
const transport = nodemailer.createTransport(transportOptions);
const direct = await measure(() => Promise.all(messages.map((message) => transport.sendMail(message))));
transport.close();

// 2b. The same, DKIM-signed by nodemailer with the key the queue signs with (RSA: nodemailer has no Ed25519).
const rsaKey = (await app.store.dkimKeys.activeForDomain(app.config.mailDomain)).find((key) => key.algorithm === "rsa-sha256")!;
const signedTransport = nodemailer.createTransport({ ...transportOptions, dkim: { domainName: app.config.mailDomain, keySelector: rsaKey.selector, privateKey: rsaKey.privateKeyPem } });
const directSigned = await measure(() => Promise.all(messages.map((message) => signedTransport.sendMail(message))));
signedTransport.close();

// 3. What DKIM signing alone allows on this machine: the same messages through the queue's signer.
const signer = createSigner(app.log, threads, app.config.dkimRsaEngine);
const keys = await app.store.dkimKeys.activeForDomain(app.config.mailDomain);
const signing = await measure(() => Promise.all(messages.map((message) => signer.sign(message.raw, { domain: app.config.mailDomain, keys, signTime: new Date() }))));
signer.close();

// 4. inboxd's queue drains the same number of queued messages: claim, sign, send, record. Done when
// no delivery waits any more; the check reads one row of a partial index (a count of the delivered
// ones every few milliseconds took a tenth of the main thread the queue runs on).
const waiting = databaseOf(app).query<{ one: number }, []>("SELECT 1 AS one FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 1");
const drain = async (queue: OutboundQueue) => {
  const measured = await measure(async () => {
    while (waiting.get()) await Bun.sleep(2);
  });
  await queue.stop();
  return measured;
};
const queued = await drain(startOutboundQueue(app));
const failed = databaseOf(app).query<{ n: number }, []>("SELECT count(*) AS n FROM deliveries WHERE status != 'delivered'").get()!.n;

// 5. A diagnostic: the same drain again, every delivery due as it was at first, with a signer that
// adds nothing, to show the queue's own cost.
databaseOf(app).run("UPDATE deliveries SET status = 'queued', attempts = 0, last_response = NULL, next_attempt_at = created_at");
databaseOf(app).run("UPDATE messages SET status = 'sent'");
const unsigned = await drain(startOutboundQueue(app, { signer: { sign: async (raw) => Buffer.from(raw), close() {} } }));

const line = (label: string, { ms, cpu }: { ms: number; cpu: string }, note = "") =>
  console.log(`  ${label.padEnd(40)}: ${rate(COUNT, ms).padStart(6)} messages/s  (${(ms / 1000).toFixed(2)} s)${note}${cpu ? `\n  ${"".padEnd(40)}  ${cpu}` : ""}`);
const rsaBy = `${rsaSignerName(app.config.dkimRsaEngine)} (INBOXD_DKIM_RSA=${app.config.dkimRsaEngine})`;
console.log(`bench/outbound: ${COUNT} messages of ${messages[0]!.raw.length} bytes, ${CONNECTIONS} connections, sink: ${sink.kind}, RSA signatures by ${rsaBy}`);
line("nodemailer pooled, direct to the sink", direct);
line("nodemailer pooled, DKIM-signed (RSA)", directSigned);
line("inboxd outbound queue (DKIM, SQLite)", queued, `  = ${((directSigned.ms / queued.ms) * 100).toFixed(0)}% of signed nodemailer (target >= 80%), ${((direct.ms / queued.ms) * 100).toFixed(0)}% of unsigned`);
line("(diagnostic: the queue, signing nothing)", unsigned);
line(`DKIM signing alone (${threads} threads)`, signing, ", the ceiling signing sets here");
line("queueing through the API (for scale)", { ms: queueMs, cpu: "" }, `, ${API_CONCURRENCY} requests at once`);
if (failed > 0) console.log(`  WARNING: ${failed} deliveries not delivered`);

await server.cleanup();
await dns.close();
sink.stop();
process.exit(0);
