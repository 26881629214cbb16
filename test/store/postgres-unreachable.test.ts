// PostgreSQL unreachable under load: the cluster is stopped for a few seconds while SMTP clients
// and API clients keep sending. While it is down SMTP answers 451 4.3.0 and the API 503 with
// Retry-After, never a permanent failure nor a 500; nothing that got 250 or 201 is lost; and the
// server recovers by itself once the cluster is back. The cluster is this file's own (stopping the
// one other tests share would fail them).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { SQL } from "bun";
import { CONNECT_TIMEOUT_SECONDS } from "../../src/store/postgres/connection";
import { ANSWER_DEADLINE_SECONDS } from "../../src/store/postgres/unavailable";
import { eventually, register, startTestServer, type Registered, type TestServer } from "../harness";
import { createInbox } from "../messages/helpers";
import { postgresMissing, postgresTestsSkipped, startPostgresCluster, type PostgresCluster } from "../peers/postgres";
import { sendMail } from "../smtp/mail-client";

const OUTAGE_MS = 3_000;
const SMTP_CLIENTS = 4;
const API_CLIENTS = 2;

type Reply = { startedAt: number; at: number; code: number; text: string; retryAfter?: string | null };

// Its own cluster, also when the suite runs on one: that one's binaries are on this machine.
const skipped = process.env.INBOXD_TEST_POSTGRES === "later" ? postgresTestsSkipped : postgresMissing;
if (skipped) console.warn(`PostgreSQL unreachable test skipped: ${skipped}`);

/** A test server whose database URL goes through `proxy` (listening here on a free port) to `target`. */
async function serverBehind(proxy: net.Server, target: URL): Promise<TestServer> {
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const proxied = new URL(target);
  proxied.port = String((proxy.address() as net.AddressInfo).port);
  return startTestServer({ env: { INBOXD_DATABASE_URL: proxied.toString() } });
}

describe.skipIf(Boolean(skipped))("PostgreSQL unreachable", () => {
  let cluster: PostgresCluster;
  let server: TestServer;
  let account: Registered;
  let recipient: { id: string; email: string };

  beforeAll(async () => {
    cluster = await startPostgresCluster();
    server = await startTestServer({ env: { INBOXD_DATABASE_URL: await cluster.createDatabase() } });
    account = await register(server.api);
    recipient = await createInbox(server, account.apiKey.key, { name: "Recipient" });
  }, 60_000);

  afterAll(async () => {
    await server?.cleanup();
    cluster?.stop();
  });

  test(
    "SMTP 451 4.3.0 and API 503 with Retry-After while it is down; nothing acknowledged lost; recovery by itself",
    async () => {
      const smtpReplies = new Map<string, Reply[]>();
      const apiReplies = new Map<string, Reply[]>();
      let stopLoad = false;
      let sent = 0;

      async function smtpClient(client: number) {
        while (!stopLoad) {
          const subject = `smtp ${client}-${sent++}`;
          const raw = `From: load@example.net\r\nTo: ${account.inbox.email}\r\nSubject: ${subject}\r\n\r\nUnder load.\r\n`;
          const replies: Reply[] = [];
          smtpReplies.set(subject, replies);
          const startedAt = performance.now();
          try {
            const info = await sendMail(server.smtpPort, { from: "load@example.net", to: [account.inbox.email], raw, socketTimeoutMs: 20_000 });
            replies.push({ startedAt, at: performance.now(), code: Number(info.response.slice(0, 3)), text: info.response });
            await Bun.sleep(10);
          } catch (error) {
            const { responseCode, response } = error as { responseCode?: number; response?: string };
            replies.push({ startedAt, at: performance.now(), code: responseCode ?? 0, text: response ?? (error as Error).message });
            await Bun.sleep(50);
          }
        }
      }

      async function apiClient(client: number) {
        while (!stopLoad) {
          const subject = `api ${client}-${sent++}`;
          const replies: Reply[] = [];
          apiReplies.set(subject, replies);
          const startedAt = performance.now();
          const res = await fetch(`${server.api.baseUrl}/v1/inboxes/${account.inbox.id}/messages/send`, {
            method: "POST",
            headers: { authorization: `Bearer ${account.apiKey.key}`, "content-type": "application/json" },
            body: JSON.stringify({ to: [recipient.email], subject, text: "Under load.", html: "<p>Under load.</p>" }),
          });
          replies.push({ startedAt, at: performance.now(), code: res.status, text: await res.text(), retryAfter: res.headers.get("retry-after") });
          if (res.status !== 201) await Bun.sleep(50);
        }
      }

      const load = Promise.all([...Array.from({ length: SMTP_CLIENTS }, (_, i) => smtpClient(i)), ...Array.from({ length: API_CLIENTS }, (_, i) => apiClient(i))]);
      const all = (replies: Map<string, Reply[]>) => [...replies.values()].flat();
      const served = (after: number) => [all(smtpReplies).filter((r) => r.at > after && r.code === 250).length, all(apiReplies).filter((r) => r.at > after && r.code === 201).length];
      let down: number;
      let restarting: number;
      try {
        await eventually("both served before the outage", () => served(0), ([smtp, api]) => smtp >= 10 && api >= 10, 30_000);
        cluster.pause();
        down = performance.now();
        await Bun.sleep(OUTAGE_MS);
        restarting = performance.now();
        cluster.start();
        // Back by itself: each kind of client is served again without anything restarted.
        await eventually("SMTP and the API served again", () => served(restarting), ([smtp, api]) => smtp >= 10 && api >= 10, 60_000);
      } finally {
        stopLoad = true;
        await load;
      }

      // Tries begun once the cluster was stopped and answered before it restarted (a reply read
      // after `down` may be of a commit made before: this process waited for pg_ctl meanwhile).
      const during = (replies: Map<string, Reply[]>) => all(replies).filter((r) => r.startedAt > down && r.at < restarting);
      // While it was down: told to try again, and never anything else.
      expect(during(smtpReplies).length).toBeGreaterThan(0);
      expect(during(apiReplies).length).toBeGreaterThan(0);
      for (const reply of during(smtpReplies)) expect(reply.text).toMatch(/^451 4\.3\.0 /);
      for (const reply of during(apiReplies)) expect({ code: reply.code, retryAfter: reply.retryAfter, body: JSON.parse(reply.text) }).toEqual({ code: 503, retryAfter: "5", body: { error: expect.stringContaining("database") } });
      // At any time: accepted, or told to try again later (a connection cut as the cluster stopped is not an answer).
      for (const reply of all(smtpReplies)) expect(reply.code === 250 || reply.code === 0 || reply.text.startsWith("451 4.3.0 ")).toBe(true);
      for (const reply of all(apiReplies)) expect([201, 503]).toContain(reply.code);

      // Nothing acknowledged lost: every 250 and every 201 stored, once.
      const database = new SQL(server.app.config.databaseUrl!, { max: 1 });
      try {
        const acknowledged = [...smtpReplies].filter(([, replies]) => replies.some((r) => r.code === 250)).map(([subject]) => subject);
        const created = [...apiReplies].filter(([, replies]) => replies.some((r) => r.code === 201)).map(([subject]) => subject);
        const stored = async (inboxId: string) =>
          new Map(((await database.unsafe("SELECT subject, count(*)::int AS n FROM messages WHERE inbox_id = $1 GROUP BY subject", [inboxId])) as { subject: string; n: number }[]).map((row) => [row.subject, row.n]));
        const received = await eventually("every accepted message stored", () => stored(account.inbox.id), (counts) => acknowledged.every((subject) => counts.has(subject)), 60_000, 200);
        const delivered = await eventually("every sent message delivered to its local inbox", () => stored(recipient.id), (counts) => created.every((subject) => counts.has(subject)), 60_000, 200);
        for (const subject of acknowledged) expect([subject, received.get(subject)]).toEqual([subject, 1]);
        for (const subject of created) expect([subject, delivered.get(subject)]).toEqual([subject, 1]);
        console.log(`PostgreSQL down ${OUTAGE_MS} ms: SMTP ${acknowledged.length} accepted, ${during(smtpReplies).length} told 451 meanwhile; API ${created.length} created, ${during(apiReplies).length} told 503 meanwhile`);
      } finally {
        await database.close();
      }
    },
    180_000,
  );

  test("behind a proxy whose server is gone (connections accepted, never answered), the API answers 503 within the connect timeout, not the driver's 30 s", async () => {
    // A TCP proxy in front of the cluster: while `silent`, it accepts connections and sends nothing.
    const target = new URL(await cluster.createDatabase());
    let silent = false;
    const piped: net.Socket[] = [];
    const proxy = net.createServer((client) => {
      piped.push(client);
      client.on("error", () => {});
      if (silent) return;
      const upstream = net.connect(Number(target.port), target.hostname);
      piped.push(upstream);
      upstream.on("error", () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    const behindProxy = await serverBehind(proxy, target);
    try {
      const registered = await register(behindProxy.api);
      silent = true;
      for (const socket of piped.splice(0)) socket.destroy();
      const started = performance.now();
      // Not through the test client, which first runs the inbound queue (on the database).
      const reply = await fetch(`${behindProxy.api.baseUrl}/v1/inboxes`, { headers: { authorization: `Bearer ${registered.apiKey.key}` } });
      const seconds = (performance.now() - started) / 1000;
      expect({ status: reply.status, retryAfter: reply.headers.get("retry-after") }).toEqual({ status: 503, retryAfter: "5" });
      expect(seconds).toBeLessThan(CONNECT_TIMEOUT_SECONDS * 3);
    } finally {
      silent = false;
      for (const socket of piped.splice(0)) socket.destroy();
      proxy.close();
      await behindProxy.cleanup();
    }
  }, 60_000);

  test("a server that stops answering on open connections (a partition, a frozen host): 503 and 451 within the answer deadline, not for as long as it lasts; then recovery", async () => {
    // A TCP proxy in front of the cluster: while `frozen`, what either side sends is held, on connections that stay open.
    const target = new URL(await cluster.createDatabase());
    let frozen = false;
    const held: (() => void)[] = [];
    const sockets: net.Socket[] = [];
    const forward = (from: net.Socket, to: net.Socket) => from.on("data", (chunk) => (frozen ? held.push(() => to.write(chunk)) : to.write(chunk)));
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      sockets.push(client, upstream);
      for (const socket of [client, upstream]) socket.on("error", () => {});
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      forward(client, upstream);
      forward(upstream, client);
    });
    const partitioned = await serverBehind(proxy, target);
    try {
      const registered = await register(partitioned.api);
      frozen = true;
      const started = performance.now();
      const [api, smtp, staging] = await Promise.all([
        // Not through the test client, which first runs the inbound queue (on the database).
        fetch(`${partitioned.api.baseUrl}/v1/inboxes`, { headers: { authorization: `Bearer ${registered.apiKey.key}` } }).then((reply) => ({ status: reply.status, retryAfter: reply.headers.get("retry-after"), seconds: (performance.now() - started) / 1000 })),
        sendMail(partitioned.smtpPort, { from: "load@example.net", to: [registered.inbox.email], raw: "Subject: partitioned\r\n\r\nHello.\r\n", socketTimeoutMs: 60_000 }).then(
          (info) => info.response,
          (error: { response?: string }) => error.response,
        ),
        // A large message's chunks, staged before its transaction, each a transaction bounded alike.
        partitioned.app.store.blobs.prepare([new Uint8Array(1024 * 1024)], Date.now()).then(
          () => "staged",
          (error: Error) => error.name,
        ),
      ]);
      expect(staging).toBe("StoreUnavailableError");
      expect({ status: api.status, retryAfter: api.retryAfter }).toEqual({ status: 503, retryAfter: "5" });
      expect(api.seconds).toBeLessThan(ANSWER_DEADLINE_SECONDS * 2);
      expect(smtp).toStartWith("451 4.3.0");
      expect((performance.now() - started) / 1000).toBeLessThan(ANSWER_DEADLINE_SECONDS * 3);
      frozen = false;
      for (const write of held.splice(0)) write();
      await eventually("the API answering again", () => fetch(`${partitioned.api.baseUrl}/v1/inboxes`, { headers: { authorization: `Bearer ${registered.apiKey.key}` } }).then((reply) => reply.status), (status) => status === 200, 30_000, 200);
      // The staging cut off left nothing: rolled back, or discarded with the next large value.
      const next = await partitioned.app.store.blobs.prepare([new Uint8Array(1024 * 1024)], Date.now());
      await partitioned.app.store.blobs.release([next.blobId!]);
      const database = new SQL(target.toString(), { max: 1 });
      expect(await database`SELECT (SELECT count(*) FROM staged_blobs)::int + (SELECT count(*) FROM blob_chunks)::int AS n`).toEqual([{ n: 0 }]);
      await database.close();
    } finally {
      frozen = false;
      for (const write of held.splice(0)) write();
      await partitioned.cleanup();
      for (const socket of sockets) socket.destroy();
      proxy.close();
    }
  }, 90_000);
});
