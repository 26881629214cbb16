// The inbound queue (src/smtp/inbound-queue.ts) on its own, on the engine the suite runs on, with
// mail arriving all the while: it then claims only a few messages at a time, and each turn that
// records their outcomes must claim the next ones. Should such a turn claim none, no analysis is
// left to call the next turn, and the backlog waits for the queue's idle timeout: the queue says
// it is done (runDueNow) with messages still due. And a row an earlier version left (its message
// inline, before acceptance wrote a blob) after an upgrade.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openApp, type App } from "../../src/app";
import { Clock } from "../../src/clock";
import { loadConfig } from "../../src/config";
import { createInbox } from "../../src/inboxes/service";
import { createLogger } from "../../src/log";
import { createAnalysisPool, type AnalysisPool } from "../../src/smtp/analysis-pool";
import { InboundPace, startInboundQueue } from "../../src/smtp/inbound-queue";
import type { InboundEnvelope } from "../../src/store";
import { closeDatabaseOf, queryRow, seedOrganization, tempDir, testEnv } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";

/** SMTP sessions handing in messages without a pause. */
class MailArriving extends InboundPace {
  override busy(): boolean {
    return true;
  }
}

const dataDir = tempDir("inbound-queue");
let app: App;
let dns: DnsServer;
let analysis: AnalysisPool;
beforeAll(async () => {
  app = await openApp(loadConfig(testEnv(dataDir)), { clock: new Clock(), log: createLogger("json", "silent") });
  dns = await startDnsServer();
  analysis = createAnalysisPool({ workers: 0, authservId: app.config.hostname, dnsServers: [dns.address], timeoutMs: 10_000, log: app.log });
});
afterAll(async () => {
  analysis.close();
  await dns.close();
  closeDatabaseOf(app);
  app.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test("while mail arrives, every turn that records analysed messages claims the next due ones, until none is left", async () => {
  const { organizationId } = await seedOrganization(app);
  const inbox = await createInbox(app, organizationId, { email: "bob@inboxd.test" });
  // Over twice what the queue claims at once while mail arrives: 24 with no analysis thread (16
  // analyses on the event loop, and 8 to start as soon as one ends).
  const messages = 50;
  const now = app.clock.now();
  for (let n = 0; n < messages; n++) {
    const envelope: InboundEnvelope = { transaction: `queued${n}`, clientIp: "127.0.0.1", helo: "client.test", mailFrom: "alice@client.test", protocol: "ESMTP", receivedAt: now, recipients: [{ organizationId, inboxId: inbox.id, address: inbox.email }] };
    const source = Buffer.from(`From: alice@client.test\r\nTo: ${inbox.email}\r\nSubject: number ${n}\r\nMessage-ID: <${n}@client.test>\r\n\r\nHello.\r\n`);
    await app.store.transaction((tx) => tx.acceptedInbound.accept(envelope, "192.0.2.1", { bytes: source, blobId: null }, source.length, now));
  }

  const queue = startInboundQueue(app, analysis, 0, new MailArriving());
  try {
    await queue.runDueNow();
    expect(await app.store.acceptedInbound.backlog()).toEqual({ depth: 0, oldestCreatedAt: null });
    expect(await queryRow(app, "SELECT count(*) AS n FROM messages WHERE inbox_id = ?", inbox.id)).toEqual({ n: messages });
  } finally {
    await queue.stop();
  }
});

test("a row an earlier version accepted with its message inline, no blob, is analysed and stored whole", async () => {
  const { organizationId } = await seedOrganization(app);
  const inbox = await createInbox(app, organizationId, { email: "carol@inboxd.test" });
  const now = app.clock.now();
  const envelope: InboundEnvelope = { transaction: "inline1", clientIp: "127.0.0.1", helo: "client.test", mailFrom: "alice@client.test", protocol: "ESMTP", receivedAt: now, recipients: [{ organizationId, inboxId: inbox.id, address: inbox.email }] };
  const source = Buffer.from(`From: alice@client.test\r\nTo: ${inbox.email}\r\nSubject: inline\r\nMessage-ID: <inline@client.test>\r\n\r\nKept in its row.\r\n`);
  const envelopeValue = app.config.databaseUrl ? "CAST(CAST(?1 AS text) AS jsonb)" : "?1";
  await queryRow(app, `INSERT INTO accepted_inbound (envelope, raw, blob_id, size, next_attempt_at, created_at) VALUES (${envelopeValue}, ?2, NULL, ?3, ?4, ?4)`, JSON.stringify(envelope), source, source.length, now);

  const queue = startInboundQueue(app, analysis, 0, new InboundPace());
  try {
    await queue.runDueNow();
    const stored = await queryRow<{ id: string }>(app, "SELECT id FROM messages WHERE inbox_id = ?1", inbox.id);
    const raw = (await app.store.messages.rawSource(stored!.id))!;
    expect(raw.toString("latin1").startsWith("Return-Path: <alice@client.test>\r\nAuthentication-Results: ")).toBe(true);
    expect(raw.toString("latin1").endsWith(source.toString("latin1"))).toBe(true);
    expect(await app.store.acceptedInbound.backlog()).toEqual({ depth: 0, oldestCreatedAt: null });
  } finally {
    await queue.stop();
  }
});
