// bench/outbound: messages queued through the HTTP API and delivered by inboxd's outbound queue
// (DKIM RSA + Ed25519 signing and queue bookkeeping included) to a local SMTP sink, beside
// nodemailer sending the same messages straight to the same sink, in the same run. The ratio is
// the queue's overhead. Both use 4 connections (INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN's default)
// to the one destination, and reuse them for many messages.
//
//   bun bench/outbound/run.ts            (BENCH_MESSAGES=5000 by default)
//
// The sink is Postfix's smtp-sink (a separate C process) when it is installed, else the test
// suite's smtp-server sink in a child process: never in this process, so it takes no CPU from
// the two senders measured.
import { createConnection, createServer } from "node:net";
import nodemailer from "nodemailer";
import { startOutboundQueue, type OutboundQueue } from "../../src/outbound/queue";
import { createSigner, defaultSigningThreads } from "../../src/outbound/sign-pool";
import { register, startTestServer } from "../../test/harness";
import { startDnsServer } from "../../test/peers/dns-server";

const COUNT = Number(process.env.BENCH_MESSAGES ?? 5000);
const threads = defaultSigningThreads();
const CONNECTIONS = 4;
const API_CONCURRENCY = 16;
const BODY = "Quarterly numbers attached below.\n".repeat(20);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startSink(): Promise<{ port: number; kind: string; stop(): void }> {
  const smtpSink = Bun.which("smtp-sink", { PATH: `${process.env.PATH}:/usr/sbin` });
  if (smtpSink) {
    const port = await freePort();
    const child = Bun.spawn([smtpSink, "-u", "nobody", `127.0.0.1:${port}`, "256"], { stdout: "ignore", stderr: "ignore" });
    await untilListening(port);
    return { port, kind: "Postfix smtp-sink", stop: () => child.kill() };
  }
  const script = `import { startSmtpSink } from ${JSON.stringify(`${import.meta.dir}/../../test/peers/smtp-sink.ts`)}; console.log((await startSmtpSink()).port);`;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "ignore" });
  const port = await firstLineNumber(child.stdout as ReadableStream<Uint8Array>);
  return { port, kind: "smtp-server sink (child process)", stop: () => child.kill() };
}

async function untilListening(port: number) {
  for (let tries = 0; tries < 200; tries++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection(port, "127.0.0.1", () => (socket.destroy(), resolve(true)));
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await Bun.sleep(10);
  }
  throw new Error(`the sink did not listen on ${port}`);
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

const sink = await startSink();
const dns = await startDnsServer();
dns.set("sink.test", "MX", [{ exchange: "mx.sink.test", priority: 10 }]);
dns.set("mx.sink.test", "A", ["127.0.0.1"]);
const server = await startTestServer({
  env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_OUTBOUND_PORT: String(sink.port), INBOXD_SEND_LIMIT: String(COUNT * 10), INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN: String(CONNECTIONS) },
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
const messages = ids.map((id) => {
  const delivery = app.store.messages.deliveriesOf([id])[0]!;
  return { raw: app.store.messages.rawSource(id)!, envelope: { from: `bounces+${delivery.id}@${app.config.hostname}`, to: [delivery.recipient] } };
});
const transport = nodemailer.createTransport({ pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity, host: "127.0.0.1", port: sink.port, secure: false, ignoreTLS: true });
const directStart = performance.now();
await Promise.all(messages.map((message) => transport.sendMail(message)));
const directMs = performance.now() - directStart;
transport.close();

// 3. What DKIM signing alone allows on this machine: the same messages through the queue's signer.
const signer = createSigner(app.log);
const keys = app.store.dkimKeys.activeForDomain(app.config.mailDomain);
const signStart = performance.now();
await Promise.all(messages.map((message) => signer.sign(message.raw, { domain: app.config.mailDomain, keys, signTime: new Date() })));
const signMs = performance.now() - signStart;
signer.close();

// 4. inboxd's queue drains the same number of queued messages: claim, sign, send, record.
const delivered = app.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM deliveries WHERE status = 'delivered'");
const queue = startOutboundQueue(app);
const drainStart = performance.now();
while (delivered.get()!.n < COUNT) await Bun.sleep(5);
const drainMs = performance.now() - drainStart;
await queue.stop();
const failed = app.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM deliveries WHERE status != 'delivered'").get()!.n;

// 5. A diagnostic: the same drain again with a signer that adds nothing, to show the queue's own cost.
app.store.sqlite.run("UPDATE deliveries SET status = 'queued', attempts = 0, next_attempt_at = ?1", [app.clock.now()]);
app.store.sqlite.run("UPDATE messages SET status = 'sent'");
const unsignedQueue = startOutboundQueue(app, { signer: { sign: async (raw) => raw, close() {} } });
const unsignedStart = performance.now();
while (delivered.get()!.n < COUNT) await Bun.sleep(5);
const unsignedMs = performance.now() - unsignedStart;
await unsignedQueue.stop();

console.log(`bench/outbound: ${COUNT} messages of ${messages[0]!.raw.length} bytes, ${CONNECTIONS} connections, sink: ${sink.kind}`);
console.log(`  nodemailer pooled, direct to the sink : ${rate(COUNT, directMs).padStart(6)} messages/s  (${(directMs / 1000).toFixed(2)} s)`);
console.log(`  inboxd outbound queue (DKIM, SQLite)  : ${rate(COUNT, drainMs).padStart(6)} messages/s  (${(drainMs / 1000).toFixed(2)} s)  = ${((directMs / drainMs) * 100).toFixed(0)}% of direct (target >= 50%)`);
console.log(`  (diagnostic: the queue, signing nothing): ${rate(COUNT, unsignedMs).padStart(6)} messages/s  (${(unsignedMs / 1000).toFixed(2)} s)`);
console.log(`  DKIM signing alone (${threads} threads)      : ${rate(COUNT, signMs).padStart(6)} messages/s  (${(signMs / 1000).toFixed(2)} s, the ceiling signing sets here)`);
console.log(`  queueing through the API (for scale)  : ${rate(COUNT, queueMs).padStart(6)} messages/s  (${(queueMs / 1000).toFixed(2)} s, ${API_CONCURRENCY} requests at once)`);
if (failed > 0) console.log(`  WARNING: ${failed} deliveries not delivered`);

await server.cleanup();
await dns.close();
sink.stop();
process.exit(0);
