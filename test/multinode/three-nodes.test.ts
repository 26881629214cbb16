// Three inboxd nodes on one PostgreSQL, over real sockets: a loopback DNS server publishes three
// equal-preference MX records for the mail domain (one per node) and the MX of a remote domain,
// an SMTP sink stands in for that remote MX, and a webhook receiver for the customer's endpoint.
// 1,000 inbound messages go to the nodes the MX records name, 300 sends through the three APIs,
// and one node is killed with SIGKILL midway. Like an MTA, a client whose node stops answering
// tries the next one. Then: every message that got 250 or 201 is stored exactly once, or more
// only if an earlier try of it was cut off by the kill (in flight); every send is delivered;
// every event reaches the webhook; the dead node's claimed rows are taken over once its leases
// run out (src/store/postgres/leases.ts). The duplicates are counted and printed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { promises as dns } from "node:dns";
import { SQL } from "bun";
import { eventually, register, startChildServer, tempDir, testEnv, type ChildServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { postgresTestsSkipped, testPostgres } from "../peers/postgres";
import { startSmtpSink, type SmtpSink } from "../peers/smtp-sink";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { sendMail } from "../smtp/mail-client";

const INBOUND = 1_000;
const SENDS = 300;
const INBOUND_AT_ONCE = 12;
const SENDS_AT_ONCE = 6;
const MAIL_DOMAIN = "inboxd.test";
const REMOTE_DOMAIN = "remote.test";
const KILLED = 1;
const WEBHOOK_ANSWER_MS = 200;
/** A node's leases run out 30 s after its last renewal; the takeover, the deliveries and the webhooks after it. */
const SETTLE_MS = 150_000;

if (postgresTestsSkipped) console.warn(`three-node test skipped: ${postgresTestsSkipped}`);

type Attempt = { node: number; outcome: "accepted" | "refused" | "cut off" };

describe.skipIf(Boolean(postgresTestsSkipped))("three nodes on one PostgreSQL", () => {
  const dirs: string[] = [];
  let postgres: Awaited<ReturnType<typeof testPostgres>>;
  let databaseUrl: string;
  let database: SQL;
  let dnsServer: DnsServer;
  let sink: SmtpSink;
  let receiver: WebhookReceiver;
  let nodes: ChildServer[];
  /** Each node's data dir: part of the name its claims carry (src/store/postgres/leases.ts). */
  const nodeDirs: string[] = [];

  beforeAll(async () => {
    postgres = await testPostgres();
    databaseUrl = await postgres.createDatabase("inboxd_three_nodes");
    database = new SQL(databaseUrl, { max: 2 });
    dnsServer = await startDnsServer();
    sink = await startSmtpSink();
    receiver = startWebhookReceiver();
    dnsServer.set(MAIL_DOMAIN, "MX", [1, 2, 3].map((n) => ({ exchange: `mx${n}.${MAIL_DOMAIN}`, priority: 10 })));
    for (const n of [1, 2, 3]) dnsServer.set(`mx${n}.${MAIL_DOMAIN}`, "A", ["127.0.0.1"]);
    dnsServer.set(REMOTE_DOMAIN, "MX", [{ exchange: `mx.${REMOTE_DOMAIN}`, priority: 10 }]);
    dnsServer.set(`mx.${REMOTE_DOMAIN}`, "A", ["127.0.0.1"]);
    const shared = {
      INBOXD_DATABASE_URL: databaseUrl,
      INBOXD_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
      INBOXD_DNS_SERVERS: dnsServer.address,
      INBOXD_OUTBOUND_PORT: String(sink.port),
      INBOXD_SEND_LIMIT: "100000",
      // A try the dead node made, whose outcome it never recorded, is tried again once its lease has
      // run out and its retry is due: due soon after, so that the test sees every takeover.
      INBOXD_DELIVERY_RETRY_DELAYS: "5,60",
      INBOXD_WEBHOOK_RETRY_DELAYS: "5,60",
      INBOXD_LOG_LEVEL: "info",
    };
    // Started together: the migrations run once, under their advisory lock.
    nodes = await Promise.all(
      [1, 2, 3].map(() => {
        const dir = tempDir("inboxd-node");
        dirs.push(dir);
        nodeDirs.push(dir);
        return startChildServer(testEnv(dir, shared), { timeoutMs: 60_000 });
      }),
    );
  }, 90_000);

  afterAll(async () => {
    for (const node of nodes ?? []) if (node.proc.exitCode === null) await node.kill("SIGKILL");
    await database?.close();
    await sink?.close();
    await receiver?.close();
    await dnsServer?.close();
    await postgres?.close();
    for (const dir of dirs) Bun.spawnSync(["rm", "-rf", dir]);
  });

  test(
    "1,000 inbound and 300 sends with a node killed midway: stored, delivered and told exactly once, but for what was in flight",
    async () => {
      const started = performance.now();
      const migrated = nodes.filter((node) => node.output().includes('"migrations applied"'));
      expect(migrated).toHaveLength(1);

      const account = await register(nodes[0]!.api);
      const apiKey = account.apiKey.key;
      // The endpoint takes a moment to answer, so that the node killed holds webhook deliveries under way.
      receiver.respond("/hooks", { delayMs: WEBHOOK_ANSWER_MS });
      const webhook = await nodes[2]!.api.post("/v1/webhooks", { url: receiver.url("/hooks"), events: ["message.received", "message.sent", "message.delivered"] }, apiKey);
      expect(webhook.status).toBe(201);

      // The MX records of the mail domain, as a sending MTA reads them: each names a node.
      const resolver = new dns.Resolver();
      resolver.setServers([dnsServer.address]);
      const exchanges = (await resolver.resolveMx(MAIL_DOMAIN)).sort((a, b) => a.priority - b.priority);
      expect(exchanges.map((mx) => mx.priority)).toEqual([10, 10, 10]);
      const nodeOfExchange = (exchange: string) => Number(/^mx(\d)\./.exec(exchange)![1]) - 1;

      let killedAt: number | undefined;
      let claimedWhenKilled = 0;
      let inboundAccepted = 0;
      const inboundAttempts = new Map<number, Attempt[]>();
      const sendAttempts = new Map<number, Attempt[]>();

      async function killOneNode() {
        killedAt = performance.now();
        await nodes[KILLED]!.kill("SIGKILL");
        claimedWhenKilled = await claimedBy(nodeDirs[KILLED]!);
      }
      /** The queue rows a node's claims hold, or (no dir) any node's: given back or finished rows have no holder. */
      const claimedBy = async (dataDir = "") => {
        let held = 0;
        for (const table of ["deliveries", "webhook_deliveries", "accepted_inbound", "drafts"]) {
          held += Number((await database.unsafe(`SELECT count(*) AS n FROM ${table} WHERE strpos(claimed_by, $1) > 0`, [dataDir]))[0].n);
        }
        return held;
      };
      const usable = (index: number) => index !== KILLED || killedAt === undefined;

      async function deliverInbound(n: number) {
        const attempts: Attempt[] = [];
        inboundAttempts.set(n, attempts);
        // Equal preference: each message starts at another node, then goes round (RFC 5321 §5.1).
        for (let turn = 0; turn < 3 * 4; turn++) {
          const node = nodeOfExchange(exchanges[(n + turn) % exchanges.length]!.exchange);
          if (!usable(node)) continue;
          const raw = `From: sender${n}@example.net\r\nTo: ${account.inbox.email}\r\nSubject: inbound ${n}\r\nMessage-ID: <inbound-${n}@example.net>\r\n\r\nMessage ${n} of the three-node test.\r\n`;
          try {
            await withDeadline(sendMail(nodes[node]!.smtpPort!, { from: `sender${n}@example.net`, to: [account.inbox.email], raw }), 30_000);
            attempts.push({ node, outcome: "accepted" });
            if (++inboundAccepted === INBOUND / 2) await killOneNode();
            return;
          } catch (error) {
            // A reply is an answer (nothing stored); a connection that broke may have been cut after the commit.
            attempts.push({ node, outcome: (error as { responseCode?: number }).responseCode ? "refused" : "cut off" });
            await Bun.sleep(50);
          }
        }
      }

      async function send(n: number) {
        const attempts: Attempt[] = [];
        sendAttempts.set(n, attempts);
        for (let turn = 0; turn < 3 * 4; turn++) {
          const node = (n + turn) % 3;
          if (!usable(node)) continue;
          try {
            const res = await nodes[node]!.api.post(`/v1/inboxes/${account.inbox.id}/messages/send`, { to: [`rcpt${n}@${REMOTE_DOMAIN}`], subject: `send ${n}`, text: `Send ${n} of the three-node test.`, html: `<p>Send ${n} of the three-node test.</p>` }, apiKey);
            attempts.push({ node, outcome: res.status === 201 ? "accepted" : "refused" });
            if (res.status === 201) return;
          } catch {
            attempts.push({ node, outcome: "cut off" });
          }
          await Bun.sleep(50);
        }
      }

      await Promise.all([pool(INBOUND, INBOUND_AT_ONCE, deliverInbound), pool(SENDS, SENDS_AT_ONCE, send)]);
      expect(killedAt).toBeDefined();
      const loadSeconds = (performance.now() - started) / 1000;

      const acceptedInbound = [...inboundAttempts].filter(([, attempts]) => attempts.some((a) => a.outcome === "accepted")).map(([n]) => n);
      const acceptedSends = [...sendAttempts].filter(([, attempts]) => attempts.some((a) => a.outcome === "accepted")).map(([n]) => n);
      // Every message reaches a node in the end: two of three answer.
      expect(acceptedInbound).toHaveLength(INBOUND);
      expect(acceptedSends).toHaveLength(SENDS);
      const cutOff = (attempts: Map<number, Attempt[]>) => new Set([...attempts].filter(([, list]) => list.some((a) => a.outcome === "cut off")).map(([n]) => n));
      const inboundInFlight = cutOff(inboundAttempts);
      const sendsInFlight = cutOff(sendAttempts);

      // Stored: every inbound message once (analysed by any node, those the dead node had claimed after its lease).
      const storedCounts = async (prefix: string) =>
        new Map(
          ((await database.unsafe(`SELECT subject, count(*)::int AS n FROM messages WHERE inbox_id = $1 AND subject LIKE $2 GROUP BY subject`, [account.inbox.id, `${prefix} %`])) as { subject: string; n: number }[]).map((row) => [
            Number(row.subject.slice(prefix.length + 1)),
            row.n,
          ]),
        );
      const inboundStored = await eventually("every accepted inbound message stored", () => storedCounts("inbound"), (counts) => acceptedInbound.every((n) => counts.has(n)), SETTLE_MS, 500);
      const sendsStored = await storedCounts("send");
      expect(acceptedSends.every((n) => sendsStored.has(n))).toBe(true);

      // The dead node held claims when it died, and they were all taken over after its leases; every
      // claim is settled before the counts below, so that they include the tries made again.
      expect(claimedWhenKilled).toBeGreaterThan(0);
      await eventually("every claim settled, the dead node's taken over", () => claimedBy(), (n) => n === 0, SETTLE_MS, 500);

      // Delivered: every send reached the remote MX.
      const subjectsAtSink = () => {
        const counts = new Map<number, number>();
        for (const message of sink.messages) {
          const n = Number(/^Subject: send (\d+)\r?$/m.exec(message.raw.toString())?.[1] ?? NaN);
          if (!Number.isNaN(n)) counts.set(n, (counts.get(n) ?? 0) + 1);
        }
        return counts;
      };
      const delivered = await eventually("every send delivered to the remote MX", subjectsAtSink, (counts) => [...sendsStored.keys()].every((n) => counts.has(n)), SETTLE_MS, 500);

      // Told: every event of the organization reached the webhook.
      const eventIds = async () => ((await database.unsafe(`SELECT id FROM events WHERE organization_id = $1 AND type IN ('message.received', 'message.sent', 'message.delivered')`, [account.organization.id])) as { id: string }[]).map((row) => row.id);
      const webhookCounts = () => {
        const counts = new Map<string, number>();
        for (const request of receiver.requests) counts.set(request.headers["webhook-id"]!, (counts.get(request.headers["webhook-id"]!) ?? 0) + 1);
        return counts;
      };
      await eventually("the outbound queue empty", async () => Number((await database.unsafe("SELECT count(*) AS n FROM deliveries WHERE status NOT IN ('delivered', 'bounced', 'rejected')"))[0].n), (n) => n === 0, SETTLE_MS, 500);
      const events = await eventIds();
      const told = await eventually("every event at the webhook", webhookCounts, (counts) => events.every((id) => counts.has(id)), SETTLE_MS, 500);


      const extra = (counts: Map<number | string, number>) => [...counts.values()].reduce((sum, n) => sum + n - 1, 0);
      const inboundDuplicates = [...inboundStored].filter(([, n]) => n > 1).map(([n]) => n);
      const sendDuplicates = [...sendsStored].filter(([, n]) => n > 1).map(([n]) => n);
      const summary = {
        loadSeconds: Number(loadSeconds.toFixed(1)),
        killedAfterInbound: INBOUND / 2,
        rowsClaimedByKilledNode: claimedWhenKilled,
        inbound: { accepted: acceptedInbound.length, cutOffInFlight: inboundInFlight.size, storedTwice: extra(inboundStored) },
        sends: { accepted: acceptedSends.length, cutOffInFlight: sendsInFlight.size, storedTwice: extra(sendsStored), deliveredTwice: extra(delivered) },
        webhook: { events: events.length, requests: receiver.requests.length, duplicates: extra(told) },
        totalSeconds: Number(((performance.now() - started) / 1000).toFixed(1)),
      };
      console.log(`three nodes: ${JSON.stringify(summary)}`);

      // Exactly once but for what was in flight on the killed node.
      for (const n of inboundDuplicates) expect(inboundInFlight.has(n)).toBe(true);
      for (const n of sendDuplicates) expect(sendsInFlight.has(n)).toBe(true);
      // A delivery or webhook sent twice was one the dead node had claimed (its remote answered, its commit never came).
      expect(extra(delivered) + extra(told)).toBeLessThanOrEqual(claimedWhenKilled + sendsInFlight.size);
      expect(inboundStored.size).toBe(INBOUND);
    },
    SETTLE_MS * 3,
  );
});

/** `promise`, or a rejection once `ms` have passed: a session whose server died may never be answered. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: Timer | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Runs `work(0..count-1)` with at most `atOnce` at a time. */
async function pool(count: number, atOnce: number, work: (n: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (next < count) await work(next++);
    }),
  );
}
