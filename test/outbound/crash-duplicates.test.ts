// kill -9 of the sending process, several times while it streams mail to one domain: nothing is
// lost (at least once), and what goes out twice is at most what was in flight at each kill, the
// deliveries whose transaction was under way or just answered. The figures are printed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { eventually, register, startChildServer, tempDir, testEnv, type ChildServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startSmtpSink, type SmtpSink } from "../peers/smtp-sink";

const MESSAGES = 150;
const KILLS = 3;
const RECIPIENTS = ["ann@remote.test", "bob@remote.test", "cy@remote.test"];

let dns: DnsServer;
let sink: SmtpSink;
let dataDir: string;
let env: Record<string, string>;
let holding = true;
const children: ChildServer[] = [];

beforeAll(async () => {
  dns = await startDnsServer();
  // While the test queues its messages, every try is deferred: the stream starts with all of them queued.
  sink = await startSmtpSink({ respond: () => (holding ? { code: 451, message: "4.3.0 Not yet" } : undefined) });
  dataDir = tempDir();
  env = testEnv(dataDir, {
    INBOXD_DNS_SERVERS: dns.address,
    INBOXD_OUTBOUND_PORT: String(sink.port),
    INBOXD_DELIVERY_RETRY_DELAYS: "1,1,1,1,1,1,1,1",
    INBOXD_SMTP_CLIENT_TIMEOUT_SCALE: "0.01",
    INBOXD_SEND_LIMIT: "10000",
  });
  dns.set("remote.test", "MX", [{ exchange: "mx.remote.test", priority: 10 }]);
  dns.set("mx.remote.test", "A", ["127.0.0.1"]);
});
afterAll(async () => {
  for (const child of children) if (child.proc.exitCode === null) await child.kill("SIGKILL");
  await sink.close();
  await dns.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Polled every 2 ms: the test acts at a moment of the stream, not after it. */
const until = <T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean) => eventually(what, read, done, 60_000, 2);

const messageIdOf = (raw: Buffer) => /^Message-ID:\s*(\S+)/im.exec(raw.toString())![1]!;
const acceptedMessages = () => new Set(sink.messages.map((message) => messageIdOf(message.raw))).size;

test(`kill -9 the sender ${KILLS} times while it sends ${MESSAGES} messages to ${RECIPIENTS.length} recipients each: none lost, duplicates at most what was in flight`, async () => {
  let child = await startChildServer(env);
  children.push(child);
  const account = await register(child.api);
  const ids: string[] = [];
  for (let i = 0; i < MESSAGES; i += 10) {
    const batch = Array.from({ length: Math.min(10, MESSAGES - i) }, (_, j) =>
      child.api.request("POST", `/v1/inboxes/${account.inbox.id}/messages/send`, { token: account.apiKey.key, body: { to: RECIPIENTS, subject: `Batch ${i + j}`, text: "Hi.", html: "<p>Hi.</p>" } }),
    );
    for (const res of await Promise.all(batch)) {
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
  }
  holding = false;

  let inFlightAtKills = 0;
  for (let kill = 1; kill <= KILLS; kill++) {
    // Somewhere in each quarter of the stream, the kill landing wherever a transaction happens to be.
    const killAt = Math.floor((MESSAGES * kill) / (KILLS + 1) + (Math.random() - 0.5) * (MESSAGES / (KILLS + 1) / 2));
    await until(`${killAt} messages at the sink`, acceptedMessages, (accepted) => accepted >= killAt);
    // In the same turn of the event loop as the kill: the sink takes no command in between.
    const inFlight = sink.latestTransactions().reduce((sum, recipients) => sum + recipients.length, 0);
    child.proc.kill("SIGKILL");
    await child.proc.exited;
    inFlightAtKills += inFlight;
    child = await startChildServer(env);
    children.push(child);
  }

  const alive = child;
  const statuses = async () => {
    const listed = [];
    for (let page = 1; ; page++) {
      const batch = (await alive.api.get(`/v1/inboxes/${account.inbox.id}/messages?per=100&page=${page}`, account.apiKey.key)).body as { id: string; status: string }[];
      listed.push(...batch);
      if (batch.length < 100) return listed.filter((message) => ids.includes(message.id)).map((message) => message.status);
    }
  };
  await until("every message delivered", statuses, (all) => all.length === MESSAGES && all.every((status) => status === "delivered"));

  const copies = new Map<string, number>();
  for (const message of sink.messages) {
    for (const recipient of message.rcptTo) {
      const key = `${messageIdOf(message.raw)} ${recipient}`;
      copies.set(key, (copies.get(key) ?? 0) + 1);
    }
  }
  const duplicates = [...copies.values()].reduce((sum, count) => sum + count - 1, 0);
  const duplicatedMessages = new Set([...copies].filter(([, count]) => count > 1).map(([key]) => key.split(" ")[0])).size;
  console.log(`crash-duplicates: ${KILLS} kills, ${MESSAGES * RECIPIENTS.length} deliveries: ${duplicates} went out twice (${duplicatedMessages} messages); in flight at the kills: ${inFlightAtKills}`);
  expect(copies.size).toBe(MESSAGES * RECIPIENTS.length); // nothing lost
  expect(duplicates).toBeLessThanOrEqual(inFlightAtKills);
}, 180_000);
