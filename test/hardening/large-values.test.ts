// Large sources and attachments are written as chunks ahead of their message's transaction, a
// received message once, in the blob its acceptance wrote, and event payloads leave attachment
// contents and message bodies to their tables: everything reads back whole, webhooks send what
// they sent before, and nothing is left behind by deletes or crashes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { queryRow, queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { sendMail } from "../smtp/mail-client";
import { openSession } from "../smtp/raw-client";
import { webhookQueue } from "../webhooks/helpers";

const receiver = startWebhookReceiver();
let dns: DnsServer;
let server: TestServer;
let apiKey: string;
let organizationId: string;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address } });
  ({ apiKey, organizationId } = await seedOrganization(server.app));
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
  await receiver.close();
});

const count = async (sql: string) => (await queryRow<{ n: number }>(server.app, `SELECT count(*) AS n FROM ${sql}`))!.n;
const newInbox = async () => (await server.api.post("/v1/inboxes", {}, apiKey)).body as { id: string; email: string };

test("a 2 MB message over SMTP is stored in chunks and reads back byte for byte: source, attachment, webhook", async () => {
  const inbox = await newInbox();
  await server.api.post("/v1/webhooks", { url: receiver.url("/large"), events: ["message.received"] }, apiKey);
  const blob = randomBytes(1536 * 1024);
  const raw = `From: a@example.net\r\nTo: ${inbox.email}\r\nSubject: large\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b\r\nContent-Type: application/octet-stream; name=blob.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n${blob.toString("base64").replace(/.{76}/g, "$&\r\n")}\r\n--b--\r\n`;
  await sendMail(server.smtpPort, { from: "a@example.net", to: [inbox.email], raw });
  const [listed] = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body;
  const message = (await server.api.get(`/v1/inboxes/${inbox.id}/messages/${listed.id}`, apiKey)).body;
  const attachment = message.attachments[0];
  expect(attachment.size).toBe(blob.length);
  expect(Buffer.from(attachment.content, "base64").equals(blob)).toBe(true);

  const source = await fetch(`http://127.0.0.1:${server.httpPort}/v1/inboxes/${inbox.id}/messages/${listed.id}/raw`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect((await source.text()).endsWith(raw)).toBe(true);
  const download = await fetch(`http://127.0.0.1:${server.httpPort}/v1/inboxes/${inbox.id}/messages/${listed.id}/attachments/${attachment.id}`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(Buffer.from(await download.arrayBuffer()).equals(blob)).toBe(true);

  // The rows hold nothing of it (the source its trace fields only); the chunks do; the stored event names the attachment only.
  expect(await count(`message_sources WHERE message_id = '${listed.id}' AND length(raw) < 1000 AND blob_id IS NOT NULL`)).toBe(1);
  expect(await count(`attachments WHERE id = '${attachment.id}' AND length(content) = 0 AND blob_id IS NOT NULL`)).toBe(1);
  const stored = (await queryRow<{ payload: string }>(server.app, "SELECT payload FROM events WHERE message_id = ?1", listed.id))!.payload;
  expect(stored.length).toBeLessThan(10_000);

  await webhookQueue(server).runDueNow();
  const [delivered] = await receiver.waitFor(1);
  expect(JSON.parse(delivered!.body).data.attachments[0].content).toBe(attachment.content);
}, 30_000);

/** Chunks that no row names: what a write or a delete left behind. */
const unnamedChunks = () =>
  count(`blob_chunks WHERE blob_id NOT IN (SELECT blob_id FROM message_sources WHERE blob_id IS NOT NULL UNION SELECT blob_id FROM attachments WHERE blob_id IS NOT NULL UNION SELECT blob_id FROM accepted_inbound WHERE blob_id IS NOT NULL)`);

test("a received message is written once: each copy's source is its trace fields, then the one blob its acceptance wrote, which goes with the last copy", async () => {
  const [first, second] = [await newInbox(), await newInbox()];
  const raw = `From: a@example.net\r\nTo: ${first.email}, ${second.email}\r\nSubject: once\r\nMessage-ID: <once@example.net>\r\n\r\nWritten once.\r\n`;
  await sendMail(server.smtpPort, { from: "a@example.net", to: [first.email, second.email], raw });
  const copies = await Promise.all(
    [first, second].map(async (inbox) => {
      const [listed] = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body;
      const source = await fetch(`http://127.0.0.1:${server.httpPort}/v1/inboxes/${inbox.id}/messages/${listed.id}/raw`, { headers: { authorization: `Bearer ${apiKey}` } });
      const text = await source.text();
      expect(text.startsWith("Return-Path: <a@example.net>\r\nAuthentication-Results: ")).toBe(true);
      expect(text).toContain(`for <${inbox.email}>`);
      expect(text.endsWith(raw)).toBe(true);
      return (await queryRow<{ raw: Uint8Array; blobId: string }>(server.app, 'SELECT raw, blob_id AS "blobId" FROM message_sources WHERE message_id = ?1', listed.id))!;
    }),
  );
  const blobId = copies[0]!.blobId;
  expect(copies[1]!.blobId).toBe(blobId);
  for (const copy of copies) expect(Buffer.from(copy.raw).toString("latin1")).not.toContain("Written once.");
  expect(await count(`blob_chunks WHERE blob_id = '${blobId}'`)).toBe(1);
  expect(await count("accepted_inbound")).toBe(0);

  await server.api.delete(`/v1/inboxes/${first.id}`, apiKey);
  expect(await count(`blob_chunks WHERE blob_id = '${blobId}'`)).toBe(1);
  await server.api.delete(`/v1/inboxes/${second.id}`, apiKey);
  expect(await count(`blob_chunks WHERE blob_id = '${blobId}'`)).toBe(0);
}, 30_000);

test("a blob two inboxes' messages share, both inboxes deleted at the same moment: its chunks go with them", async () => {
  const other = await seedOrganization(server.app, "Other side");
  for (let round = 0; round < 6; round++) {
    const [sender, recipient] = [await newInbox(), (await server.api.post("/v1/inboxes", {}, other.apiKey)).body as { id: string; email: string }];
    // Over 256 KiB: the source is a blob, which the sent message and the recipient's copy share.
    const sent = await server.api.post(`/v1/inboxes/${sender.id}/messages/send`, { to: [recipient.email], subject: "shared", text: "x".repeat(400 * 1024), html: "" }, apiKey);
    expect(sent.status).toBe(201);
    const deleted = await Promise.all([server.api.delete(`/v1/inboxes/${sender.id}`, apiKey), server.api.delete(`/v1/inboxes/${recipient.id}`, other.apiKey)]);
    expect(deleted.map((res) => res.status)).toEqual([200, 200]);
  }
  expect(await unnamedChunks()).toBe(0);
}, 60_000);

test("an accepted message no copy keeps (a duplicate), or whose forged Authentication-Results the analysis took out, leaves no blob behind", async () => {
  const inbox = await newInbox();
  const raw = `From: a@example.net\r\nTo: ${inbox.email}\r\nSubject: twice\r\nMessage-ID: <twice@example.net>\r\n\r\nSent twice.\r\n`;
  for (let i = 0; i < 2; i++) await sendMail(server.smtpPort, { from: "a@example.net", to: [inbox.email], raw });
  const forged = `Authentication-Results: ${server.app.config.hostname}; spf=pass\r\nFrom: a@example.net\r\nTo: ${inbox.email}\r\nSubject: forged\r\n\r\nForged.\r\n`;
  await sendMail(server.smtpPort, { from: "a@example.net", to: [inbox.email], raw: forged });
  const listed = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body as { id: string; subject: string }[];
  expect(listed.map((message) => message.subject).sort()).toEqual(["forged", "twice"]);
  const forgedId = listed.find((message) => message.subject === "forged")!.id;
  // Its own bytes, in its row: the accepted ones held the forged field.
  const source = (await queryRow<{ raw: Uint8Array; blobId: string | null }>(server.app, 'SELECT raw, blob_id AS "blobId" FROM message_sources WHERE message_id = ?1', forgedId))!;
  expect(source.blobId).toBeNull();
  expect(Buffer.from(source.raw).toString("latin1")).toContain("Forged.");
  expect(Buffer.from(source.raw).toString("latin1").match(/^Authentication-Results:/gm)).toHaveLength(1);
  expect(await count("accepted_inbound")).toBe(0);
  expect(await unnamedChunks()).toBe(0);
}, 30_000);

/** A message with a text and an HTML part, received over SMTP; the message as the API shows it. */
async function receiveWithBodies(inbox: { id: string; email: string }, subject: string) {
  const raw = `From: a@example.net\r\nTo: ${inbox.email}\r\nSubject: ${subject}\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlain \u00e9t\u00e9 "quoted" ${subject}\r\n--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Rich <b>${subject}</b></p>\r\n--b--\r\n`;
  await sendMail(server.smtpPort, { from: "a@example.net", to: [inbox.email], raw });
  const [listed] = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body;
  return (await server.api.get(`/v1/inboxes/${inbox.id}/messages/${listed.id}`, apiKey)).body as { id: string; text: string; html: string; subject: string };
}

/** The inbox's message.received events as the event stream reads them. */
const receivedEvents = async (inboxId: string) => (await server.app.store.events.readAfter(organizationId, { afterId: null, types: ["message.received"], inboxId, limit: 10, maxChars: 1_000_000 })).events;

const deliveredFor = (hook: WebhookReceiver, messageId: string) => hook.requests.map((request) => JSON.parse(request.body)).find((body) => body.messageId === messageId);

test("a message event is stored without the message's text and HTML, and its webhook and the stream carry them as before", async () => {
  const hook = startWebhookReceiver();
  try {
    const inbox = await newInbox();
    await server.api.post("/v1/webhooks", { url: hook.url("/bodies"), events: ["message.received"] }, apiKey);
    const message = await receiveWithBodies(inbox, "bodies");
    expect(message.text).toContain("Plain été");
    expect(message.html).toContain("<b>bodies</b>");
    const stored = (await queryRow<{ payload: string }>(server.app, "SELECT payload FROM events WHERE message_id = ?1", message.id))!.payload;
    expect(stored).not.toContain("Plain");
    expect(stored).not.toContain("Rich");
    expect(JSON.parse(stored).subject).toBe("bodies");

    await webhookQueue(server).runDueNow();
    await hook.waitFor(1);
    const delivered = deliveredFor(hook, message.id);
    expect(delivered.data).toEqual(message);
    expect(JSON.parse((await receivedEvents(inbox.id))[0]!.payload)).toEqual(message);
  } finally {
    await hook.close();
  }
}, 30_000);

test("a message deleted before its event is read: the event leaves its text and HTML out, the rest as it was", async () => {
  const inbox = await newInbox();
  const message = await receiveWithBodies(inbox, "deleted");
  expect((await server.api.delete(`/v1/inboxes/${inbox.id}`, apiKey)).status).toBe(200);
  const { text: _text, html: _html, ...withoutBodies } = message;
  expect(JSON.parse((await receivedEvents(inbox.id))[0]!.payload)).toEqual(withoutBodies);
}, 30_000);

test("a declared SIZE above, at or below the real size: the message is stored byte for byte", async () => {
  const inbox = await newInbox();
  const body = randomBytes(400 * 1024).toString("base64").replace(/.{76}/g, "$&\r\n");
  for (const [n, skew] of [[1, 1000], [2, 0], [3, -1000]] as const) {
    const raw = `From: a@example.net\r\nTo: ${inbox.email}\r\nSubject: declared ${n}\r\nMessage-ID: <declared${n}@example.net>\r\n\r\n${body}\r\n`;
    const session = await openSession(server.smtpPort);
    for (const line of ["EHLO client.example", `MAIL FROM:<a@example.net> SIZE=${raw.length + skew}`, `RCPT TO:<${inbox.email}>`, "DATA"]) await session.command(line);
    session.write(raw + ".\r\n");
    expect((await session.reply()).code).toBe(250);
    session.end();
    const listed = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body.find((m: { subject: string }) => m.subject === `declared ${n}`);
    const source = await fetch(`http://127.0.0.1:${server.httpPort}/v1/inboxes/${inbox.id}/messages/${listed.id}/raw`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect((await source.text()).endsWith(raw)).toBe(true);
  }
}, 30_000);

test("a send and its local copy share their chunks, which go with the last message that names them", async () => {
  const sender = await newInbox();
  const recipient = await newInbox();
  const content = randomBytes(600 * 1024);
  const sent = await server.api.post(`/v1/inboxes/${sender.id}/messages/send`, { to: [recipient.email], subject: "shared", text: "t", html: "<p>t</p>", attachments: [{ content: content.toString("base64"), name: "c.bin" }] }, apiKey);
  expect(sent.status).toBe(201);
  const blobIds = await queryRows<{ blobId: string }>(server.app, 'SELECT DISTINCT blob_id AS "blobId" FROM attachments WHERE message_id = ?1', sent.body.id);
  expect(blobIds.length).toBe(1);
  const chunksOf = () => count(`blob_chunks WHERE blob_id = '${blobIds[0]!.blobId}'`);
  expect(await chunksOf()).toBeGreaterThan(1);

  await server.api.delete(`/v1/inboxes/${sender.id}`, apiKey);
  expect(await chunksOf()).toBeGreaterThan(1);
  const [copy] = (await server.api.get(`/v1/inboxes/${recipient.id}/messages`, apiKey)).body;
  const read = (await server.api.get(`/v1/inboxes/${recipient.id}/messages/${copy.id}`, apiKey)).body;
  expect(Buffer.from(read.attachments[0].content, "base64").equals(content)).toBe(true);

  await server.api.delete(`/v1/inboxes/${recipient.id}`, apiKey);
  expect(await chunksOf()).toBe(0);
}, 30_000);

test("chunks of a message that a crash stopped before its transaction are removed at the next start", async () => {
  const prepared = await server.app.store.blobs.prepare([randomBytes(700 * 1024)], server.app.clock.now());
  expect(await count(`blob_chunks WHERE blob_id = '${prepared.blobId}'`)).toBeGreaterThan(0);
  await server.stop();
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address }, dataDir: server.dataDir });
  expect(await count(`blob_chunks WHERE blob_id = '${prepared.blobId}'`)).toBe(0);
  expect(await count("staged_blobs")).toBe(0);
}, 30_000);
