/** storeReceivedMessage: the path inbound SMTP takes for every accepted recipient. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseMessage } from "../../src/mail/parse";
import { storeReceivedMessage } from "../../src/messages/receive";
import { MAX_THREAD_MESSAGES } from "../../src/messages/threading";
import type { InboxRecord } from "../../src/store";
import { queryRow, seedOrganization, startTestServer, type TestServer } from "../harness";
import { createInbox, events } from "./helpers";

let server: TestServer;
let key: string;
let inbox: InboxRecord;
let otherInbox: InboxRecord;
beforeAll(async () => {
  server = await startTestServer();
  const org = await seedOrganization(server.app);
  key = org.apiKey;
  inbox = (await server.app.store.inboxes.find(org.organizationId, (await createInbox(server, key)).id))!;
  otherInbox = (await server.app.store.inboxes.find(org.organizationId, (await createInbox(server, key)).id))!;
});
afterAll(() => server.cleanup());

const mail = (headers: Record<string, string>, body = "Hello there.") =>
  Buffer.from(
    [
      "From: Sender Name <sender@example.com>",
      `To: ${inbox.email}`,
      "Subject: Quarterly report",
      "Date: Tue, 01 Apr 2025 10:00:00 +0000",
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      "Content-Type: text/plain; charset=utf-8",
      "",
      body,
      "",
    ].join("\r\n"),
  );

async function receive(raw: Buffer, target = inbox, extra: { authentication?: { spf: string; dkim: string; dmarc: string } } = {}) {
  const parsed = await parseMessage(raw);
  return server.app.store.transaction((tx) => storeReceivedMessage(server.app, tx, { inbox: target, parsed, raw, ...extra }));
}

describe("storeReceivedMessage", () => {
  test("stores the message, its source, a new thread and the message.received event; get shows authentication", async () => {
    const raw = mail({ "Message-ID": "<root@example.com>" });
    const message = await receive(raw, inbox, { authentication: { spf: "pass", dkim: "pass", dmarc: "none" } });
    expect(message).toMatchObject({ inboxId: inbox.id, toInboxId: inbox.id, from: "sender@example.com", to: [inbox.email], subject: "Quarterly report", text: "Hello there.\n", status: "received", attachments: [] });
    expect(message).not.toHaveProperty("fromInboxId");
    expect(await events(server, "message.received", message.id)).toEqual([message]);
    expect(await server.app.store.messages.rawSource(message.id)).toEqual(raw);
    const got = await server.api.get(`/v1/inboxes/${inbox.id}/messages/${message.id}`, key);
    expect(got.body.authentication).toEqual({ spf: "pass", dkim: "pass", dmarc: "none" });
    expect(got.body).toEqual(message);
  });

  test("threads by In-Reply-To, then by References; an unknown parent starts a new thread", async () => {
    const root = await receive(mail({ "Message-ID": "<t1@example.com>" }));
    const byInReplyTo = await receive(mail({ "Message-ID": "<t2@example.com>", "In-Reply-To": "<t1@example.com>" }));
    const byReferences = await receive(mail({ "Message-ID": "<t3@example.com>", "In-Reply-To": "<elsewhere@example.com>", References: "<unknown@example.com> <t2@example.com>" }));
    const unrelated = await receive(mail({ "Message-ID": "<t4@example.com>", "In-Reply-To": "<never-seen@example.com>" }));
    expect(byInReplyTo.threadId).toBe(root.threadId);
    expect(byReferences.threadId).toBe(root.threadId);
    expect(unrelated.threadId).not.toBe(root.threadId);
    const thread = (await server.app.store.threads.find(inbox.organizationId, inbox.id, root.threadId))!;
    expect(thread.messageCount).toBe(3);
    expect(thread.lastMessageAt).toBe(Date.parse(byReferences.createdAt));
  });

  test("at most 20 Message-IDs are looked up, In-Reply-To's first: an In-Reply-To naming thousands finds its parent only among them", async () => {
    const parent = await receive(mail({ "Message-ID": "<capped-parent@example.com>" }));
    const unknown = (count: number) => Array.from({ length: count }, (_, i) => `<unknown-${i}@example.com>`).join(" ");
    const past = await receive(mail({ "Message-ID": "<capped-1@example.com>", "In-Reply-To": `${unknown(5000)} <capped-parent@example.com>` }));
    const within = await receive(mail({ "Message-ID": "<capped-2@example.com>", "In-Reply-To": `${unknown(19)} <capped-parent@example.com>` }));
    const pastInReplyTo = await receive(mail({ "Message-ID": "<capped-3@example.com>", "In-Reply-To": unknown(20), References: "<capped-parent@example.com>" }));
    expect(past.threadId).not.toBe(parent.threadId);
    expect(within.threadId).toBe(parent.threadId);
    expect(pastInReplyTo.threadId).not.toBe(parent.threadId);
  });

  test(`a thread takes ${MAX_THREAD_MESSAGES} messages by Message-ID; the next answer starts a thread of its own, which the answers after it join`, async () => {
    const root = await receive(mail({ "Message-ID": "<long-0@example.com>" }));
    for (let i = 1; i < MAX_THREAD_MESSAGES; i++) expect((await receive(mail({ "Message-ID": `<long-${i}@example.com>`, "In-Reply-To": `<long-${i - 1}@example.com>` }))).threadId).toBe(root.threadId);
    const overflow = await receive(mail({ "Message-ID": `<long-${MAX_THREAD_MESSAGES}@example.com>`, "In-Reply-To": `<long-${MAX_THREAD_MESSAGES - 1}@example.com>` }));
    expect(overflow.threadId).not.toBe(root.threadId);
    expect((await server.app.store.threads.find(inbox.organizationId, inbox.id, root.threadId))!.messageCount).toBe(MAX_THREAD_MESSAGES);
    const next = await receive(mail({ "Message-ID": "<long-next@example.com>", "In-Reply-To": `<long-${MAX_THREAD_MESSAGES}@example.com>` }));
    expect(next.threadId).toBe(overflow.threadId);
    // An answer to the full thread that also names the next one's message (its References) joins that one.
    const named = await receive(mail({ "Message-ID": "<long-named@example.com>", "In-Reply-To": "<long-50@example.com>", References: `<long-0@example.com> <long-next@example.com> <long-50@example.com>` }));
    expect(named.threadId).toBe(overflow.threadId);
  });

  test("Message-IDs thread only within the same inbox", async () => {
    await receive(mail({ "Message-ID": "<shared@example.com>" }));
    const elsewhere = await receive(mail({ "Message-ID": "<other@example.com>", "In-Reply-To": "<shared@example.com>" }), otherInbox);
    expect((await server.app.store.threads.find(otherInbox.organizationId, otherInbox.id, elsewhere.threadId))!.messageCount).toBe(1);
  });

  test("attachments are stored and shown in base64", async () => {
    const raw = Buffer.from(
      [
        "From: sender@example.com",
        `To: ${inbox.email}`,
        "Subject: With file",
        "MIME-Version: 1.0",
        'Content-Type: multipart/mixed; boundary="b"',
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "See attached.",
        "--b",
        'Content-Type: application/octet-stream; name="data.bin"',
        'Content-Disposition: attachment; filename="data.bin"',
        "Content-Transfer-Encoding: base64",
        "",
        Buffer.from([0, 1, 2, 255]).toString("base64"),
        "--b--",
        "",
      ].join("\r\n"),
    );
    const message = await receive(raw);
    expect(message.attachments).toEqual([{ id: expect.stringMatching(/^att_/), name: "data.bin", contentType: "application/octet-stream", size: 4, inline: false, content: Buffer.from([0, 1, 2, 255]).toString("base64") }]);
  });

  test("an attachment keeps the media type its part declares: application/octet-stream named page.html stays inert bytes", async () => {
    const part = (type: string, name: string) => [`--b`, `Content-Type: ${type}; name="${name}"`, `Content-Disposition: attachment; filename="${name}"`, "", "<script>alert(1)</script>"];
    const raw = Buffer.from(
      ["From: sender@example.com", `To: ${inbox.email}`, "Subject: Typed files", "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="b"', "", "--b", "Content-Type: text/plain", "", "Two files.", ...part("application/octet-stream", "page.html"), ...part("text/html", "shown.html"), "--b--", ""].join("\r\n"),
    );
    const message = await receive(raw);
    expect(message.attachments.map((attachment) => [attachment.name, attachment.contentType])).toEqual([
      ["page.html", "application/octet-stream"],
      ["shown.html", "text/html"],
    ]);
  });

  test("all or nothing: a failure leaves no thread, message or event behind", async () => {
    const count = async (table: string) => (await queryRow<{ n: number }>(server.app, `SELECT count(*) AS n FROM ${table}`))!.n;
    const before = await Promise.all(["threads", "messages", "events"].map(count));
    const parsed = await parseMessage(mail({ "Message-ID": "<orphan@example.com>" }));
    // The attachment row is written after the thread and the message, and this one cannot be.
    const broken = { ...parsed, attachments: [{ contentType: "text/plain", content: null as unknown as Buffer, inline: false }] };
    await expect(server.app.store.transaction((tx) => storeReceivedMessage(server.app, tx, { inbox, parsed: broken, raw: Buffer.from("x") }))).rejects.toThrow();
    expect(await Promise.all(["threads", "messages", "events"].map(count))).toEqual(before);
  });
});
