import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { queryRow, queryRows, seedOrganization, type TestServer } from "../harness";
import type { Transaction } from "../../src/store/store";
import { createInbox, events, headerBlock, rawSource, startMessageServer, validSend } from "./helpers";

let server: TestServer;
let key: string;
let inbox: { id: string; email: string };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  key = (await seedOrganization(server.app)).apiKey;
  inbox = await createInbox(server, key, { name: "Sales Team" });
});
afterAll(() => server.cleanup());

const send = (body: unknown, inboxId = inbox.id, token = key) => server.api.post(`/v1/inboxes/${inboxId}/messages/send`, body, token);
const messageCount = async () => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM messages"))!.n;

describe("GET .../messages/{messageId}/raw", () => {
  test("answers the stored RFC 5322 source as message/rfc822, with CORS; another organization gets 404", async () => {
    const message = (await send(validSend({ to: ["raw@example.org"], subject: "Raw source" }))).body;
    const res = await fetch(`${server.api.baseUrl}/v1/inboxes/${inbox.id}/messages/${message.id}/raw`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("message/rfc822");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(await res.text()).toBe(await rawSource(server, message.id));

    const other = (await seedOrganization(server.app)).apiKey;
    const foreign = await server.api.get(`/v1/inboxes/${inbox.id}/messages/${message.id}/raw`, other);
    expect(foreign.status).toBe(404);
    expect((await server.api.get(`/v1/inboxes/${inbox.id}/messages/msg_unknown/raw`, key)).body).toEqual({ error: "Message not found" });
  });
});

describe("send to remote recipients", () => {
  test("201: a sent message in a new thread, one queued delivery per remote recipient, the composed source stored", async () => {
    const attachment = Buffer.from("%PDF-1.4 fake pdf bytes\n");
    const res = await send(
      validSend({
        to: ["Alice@Example.com", "bob@example.org"],
        cc: ["carol@example.net"],
        bcc: ["dave@example.com", "alice@example.com"],
        labels: ["invoices", "q3"],
        attachments: [{ content: attachment.toString("base64"), name: "invoice.pdf" }],
      }),
    );
    expect(res.status).toBe(201);
    const message = res.body;
    expect(message).toMatchObject({
      inboxId: inbox.id,
      fromInboxId: inbox.id,
      from: inbox.email,
      to: ["Alice@example.com", "bob@example.org"],
      cc: ["carol@example.net"],
      bcc: ["dave@example.com", "alice@example.com"],
      subject: "Hello",
      text: "Plain body",
      html: "<p>HTML body</p>",
      labels: ["invoices", "q3"],
      status: "sent",
    });
    expect(message._id).toBe(message.id);
    expect(message.attachments).toEqual([{ id: expect.stringMatching(/^att_/), name: "invoice.pdf", contentType: "application/pdf", size: attachment.length, inline: false, content: attachment.toString("base64") }]);
    // Alice appears twice (To and Bcc, in two cases): one delivery.
    expect(message.deliveries.map((d: { recipient: string }) => d.recipient)).toEqual(["Alice@example.com", "bob@example.org", "carol@example.net", "dave@example.com"]);
    // Not tried yet: the last try falls due after the whole retry schedule (outbound/policy.ts, lastTryDueAt).
    const expiresAt = new Date(Date.parse(message.createdAt) + server.app.config.deliveryRetryDelays.reduce((sum, seconds) => sum + seconds * 1000, 0)).toISOString();
    expect(message.deliveries[0]).toEqual({ recipient: "Alice@example.com", status: "queued", attempts: 0, nextAttemptAt: message.createdAt, expiresAt, updatedAt: message.createdAt });
    // The rows the outbound worker takes over (it may already be at work on them).
    const rows = await queryRows<{ recipient: string; domain: string; created_at: number }>(server.app, "SELECT recipient, domain, created_at FROM deliveries WHERE message_id = ? ORDER BY id", message.id);
    expect(rows.map((d) => `${d.recipient} ${d.domain}`)).toEqual(["Alice@example.com example.com", "bob@example.org example.org", "carol@example.net example.net", "dave@example.com example.com"]);
    expect(rows.every((d) => d.created_at === Date.parse(message.createdAt))).toBe(true);

    const thread = await server.api.get(`/v1/inboxes/${inbox.id}/threads/${message.threadId}`, key);
    expect(thread.body).toMatchObject({ id: message.threadId, subject: "Hello", messageCount: 1 });
    expect(await events(server, "message.sent", message.id)).toEqual([message]);

    const raw = await rawSource(server, message.id);
    const headers = headerBlock(raw);
    expect(headers).toMatch(/^Message-ID: <[0-9a-f]{32}@mx\.inboxd\.test>$/m);
    expect(headers).toMatch(/^From: Sales Team <[0-9a-f]+@inboxd\.test>$/m);
    expect(headers).toContain("To: Alice@example.com, bob@example.org");
    expect(headers).toContain("Cc: carol@example.net");
    expect(headers).toMatch(/^Date: /m);
    expect(raw).not.toMatch(/^Bcc:/im);
    expect(raw).not.toContain("dave@example.com");
    expect(raw).toContain("multipart/alternative");
    expect(raw).toMatch(/filename=invoice\.pdf/);
  });

  test("labels given twice are kept once, in the order first given; an empty text or html is left out of the sender's message; a local recipient's copy has the text its HTML makes, as one received over SMTP", async () => {
    const colleague = await createInbox(server, key, {});
    const sent = await send(validSend({ to: [colleague.email], subject: "Empty text", text: "", html: "<b>only html</b>", labels: ["a", "a", "b", "a"] }));
    expect(sent.status).toBe(201);
    expect(sent.body.labels).toEqual(["a", "b"]);
    expect(sent.body).not.toHaveProperty("text");
    const copies = (await server.api.get(`/v1/inboxes/${colleague.id}/messages`, key)).body.filter((message: { subject: string }) => message.subject === "Empty text");
    expect(copies).toHaveLength(1);
    const copy = (await server.api.get(`/v1/inboxes/${colleague.id}/messages/${copies[0].id}`, key)).body;
    expect(copy.text).toBe("only html");
    expect(copy.html).toContain("only html");
    expect((await server.api.get(`/v1/inboxes/${colleague.id}/messages?query=${encodeURIComponent("only html")}`, key)).body.map((m: { id: string }) => m.id)).toEqual([copy.id]);
    const htmlless = await send(validSend({ to: [colleague.email], subject: "Empty html", text: "only text", html: "" }));
    expect(htmlless.body).not.toHaveProperty("html");
  });

  test("get shows every field; the list shows the description's subset, newest first", async () => {
    // To a local inbox: no delivery for the outbound worker to move on while the test reads.
    const peer = await createInbox(server, key);
    const first = (await send(validSend({ to: [peer.email], subject: "first", labels: ["a"], attachments: [{ content: "aGk=", name: "hi.txt" }] }))).body;
    server.clock.advance(1);
    const second = (await send(validSend({ to: [peer.email], subject: "second" }))).body;
    const got = await server.api.get(`/v1/inboxes/${inbox.id}/messages/${first.id}`, key);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(first);
    expect(first.deliveries).toEqual([]);

    const list = await server.api.get(`/v1/inboxes/${inbox.id}/messages?per=2`, key);
    expect(list.status).toBe(200);
    expect(list.body.map((m: { id: string }) => m.id)).toEqual([second.id, first.id]);
    expect(Object.keys(list.body[0]).sort()).toEqual(["_id", "createdAt", "from", "fromName", "html", "id", "inboxId", "labels", "organizationId", "read", "status", "subject", "text", "threadId", "to"]);
    expect((await server.api.get(`/v1/inboxes/${inbox.id}/messages?page=2&per=1`, key)).body[0].id).toBe(first.id);
  });

  test("a send is listed by when it was stored: one held before its transaction comes above mail stored meanwhile", async () => {
    const peer = await createInbox(server, key);
    const store = server.app.store;
    const batched = store.transactionBatched;
    const reached = Promise.withResolvers<void>();
    const released = Promise.withResolvers<void>();
    let holdNext = true;
    // The first send waits at its transaction, as one that composed a large message would.
    store.transactionBatched = async <T,>(work: (tx: Transaction) => Promise<T>): Promise<T> => {
      // Only a send's: the webhook queue takes batched transactions of its own.
      if (holdNext && new Error().stack!.includes("at dispatch ")) {
        holdNext = false;
        reached.resolve();
        await released.promise;
      }
      return batched.call<typeof store, [typeof work], Promise<T>>(store, work);
    };
    try {
      const held = send(validSend({ to: [peer.email], subject: "composed first, stored second" }));
      await reached.promise;
      server.clock.advance(60_000);
      const storedMeanwhile = (await send(validSend({ to: [peer.email], subject: "stored first" }))).body;
      released.resolve();
      const storedLast = (await held).body;
      expect(Date.parse(storedLast.createdAt)).toBeGreaterThanOrEqual(Date.parse(storedMeanwhile.createdAt));
      const list = await server.api.get(`/v1/inboxes/${inbox.id}/messages?per=2`, key);
      expect(list.body.map((m: { id: string }) => m.id)).toEqual([storedLast.id, storedMeanwhile.id]);
    } finally {
      store.transactionBatched = batched;
    }
  });
});

describe("bad input", () => {
  const required = ["to", "subject", "text", "html"] as const;
  test.each(required)("missing %s is 422 naming it", async (field) => {
    const body: Record<string, unknown> = validSend();
    delete body[field];
    const res = await send(body);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith(`${field}: `);
  });

  // Named as the service's own checks name fields: `to[0]`, `attachments[0].content`, never `body.to`.
  test.each([
    ["to", "someone@example.com", "to"],
    ["to", [42], "to[0]"],
    ["cc", "x@example.com", "cc"],
    ["bcc", {}, "bcc"],
    ["subject", 1, "subject"],
    ["text", null, "text"],
    ["html", ["<p>"], "html"],
    ["labels", "urgent", "labels"],
    ["labels", [""], "labels[0]"],
    // Elysia reads an object given for an array as an array of its values: the first entry is named.
    ["attachments", { content: "QQ==" }, "attachments[0]"],
    ["attachments", [{ name: "a.txt" }], "attachments[0].content"],
    ["attachments", [{ content: 5 }], "attachments[0].content"],
  ])("%s = %j is 422 naming it", async (field, value, name) => {
    const res = await send(validSend({ [field]: value }));
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith(`${name}: `);
  });

  test("no body, and malformed JSON", async () => {
    expect((await server.api.request("POST", `/v1/inboxes/${inbox.id}/messages/send`, { token: key })).status).toBe(422);
    const res = await server.api.request("POST", `/v1/inboxes/${inbox.id}/messages/send`, { token: key, rawBody: "{", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
  });

  test("0 recipients is 422", async () => {
    const res = await send(validSend({ to: [] }));
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith("to: ");
  });

  test("1,000 recipients is 422; 51 across to, cc and bcc is 422; 50 pass", async () => {
    const addresses = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.com`);
    expect((await send(validSend({ to: addresses(1000, "r") }))).status).toBe(422);
    const over = await send(validSend({ to: addresses(30, "t"), cc: addresses(11, "c"), bcc: addresses(10, "b") }));
    expect(over.status).toBe(422);
    expect(over.body.error).toBe("to, cc, bcc: at most 50 recipients in all (got 51)");
    const limit = await send(validSend({ to: addresses(30, "t"), cc: addresses(10, "c"), bcc: addresses(10, "b") }));
    expect(limit.status).toBe(201);
    expect(limit.body.deliveries).toHaveLength(50);
  });

  test.each([["not-an-address"], ["a@b"], ["Name <a@b>"], ["Name <a@example.com> x"], ["a@example.com, b@example.com"], ["a@example.com, Bob <b@example.com>"], ["Team: a@example.com;"]])(
    "address %j is 422 naming the entry",
    async (address) => {
      const res = await send(validSend({ to: ["ok@example.com", address] }));
      expect(res.status).toBe(422);
      expect(res.body.error).toBe("to[1]: must be an email address such as name@example.com or Name <name@example.com>");
    },
  );

  test("header injection through subject, addresses or attachment names creates nothing", async () => {
    const before = await messageCount();
    const attempts = [
      [validSend({ subject: "Hi\r\nBcc: victim@example.com" }), "subject"],
      [validSend({ subject: "Hi\nX-Injected: yes" }), "subject"],
      [validSend({ to: ["a@example.com\r\nBcc: victim@example.com"] }), "to[0]"],
      [validSend({ cc: ["a@example.com\nBcc: victim@example.com"] }), "cc[0]"],
      // A name's C1 controls (NEL shows as a line break; CSI drives terminals) and line separators.
      [validSend({ to: ["Ada\u0085Lovelace <a@example.com>"] }), "to[0]"],
      [validSend({ cc: ["Bob\u009b31m <b@example.com>"] }), "cc[0]"],
      [validSend({ bcc: ["Eve\u2028Smith <e@example.com>"] }), "bcc[0]"],
      [validSend({ attachments: [{ content: "QQ==", name: "a.txt\r\nX-Injected: yes" }] }), "attachments[0].name"],
      [validSend({ attachments: [{ content: "QQ==", contentType: "text/plain\r\nX-Injected: yes" }] }), "attachments[0].contentType"],
      [validSend({ attachments: [{ content: "QQ==", contentType: 'text/plain; x="a\u2028b"' }] }), "attachments[0].contentType"],
      [validSend({ attachments: [{ content: "QQ==", contentType: 'text/plain; x="a\u0085b"' }] }), "attachments[0].contentType"],
    ] as const;
    for (const [body, field] of attempts) {
      const res = await send(body);
      expect({ field, status: res.status }).toEqual({ field, status: 422 });
      expect(res.body.error).toStartWith(`${field}:`);
    }
    expect(await messageCount()).toBe(before);
  });

  test("a subject with a tab and non-ASCII text is sent as one header field", async () => {
    const res = await send(validSend({ subject: "Grüße\tund Ölpreise" }));
    expect(res.status).toBe(201);
    const headers = headerBlock(await rawSource(server, res.body.id));
    expect(headers.match(/^Subject:/gim)).toHaveLength(1);
    expect(headers).not.toMatch(/^X-Injected/im);
  });

  test.each([["not base64!"], ["Q==="], ["Q"], ["QQ==QQ=="], ["-_8="]])("attachment content %j that is not base64 is 422", async (content) => {
    const res = await send(validSend({ attachments: [{ content, name: "a.bin" }] }));
    expect(res.status).toBe(422);
    expect(res.body.error).toBe("attachments[0].content: must be base64");
  });

  test("base64 broken into lines and without padding is accepted", async () => {
    const res = await send(validSend({ attachments: [{ content: "aGVs\r\nbG8", name: "hello.txt" }] }));
    expect(res.status).toBe(201);
    expect(Buffer.from(res.body.attachments[0].content, "base64").toString()).toBe("hello");
    expect(res.body.attachments[0].contentType).toBe("text/plain");
  });

  test("a 19 MB body with an attachment passes; a 21 MB body is 413", async () => {
    const content = Buffer.alloc(14_250_000, 7).toString("base64");
    expect(content.length).toBe(19_000_000);
    const res = await send(validSend({ attachments: [{ content, name: "big.bin", contentType: "application/octet-stream" }] }));
    expect(res.status).toBe(201);
    expect(res.body.attachments[0].size).toBe(14_250_000);
    const tooBig = await send(validSend({ text: "x".repeat(21 * 1024 * 1024) }));
    expect(tooBig.status).toBe(413);
  }, 60_000);

  test("an unknown inbox, or another organization's, is 404 Inbox not found", async () => {
    const other = await seedOrganization(server.app);
    for (const [inboxId, token] of [["inb_unknown", key], [inbox.id, other.apiKey]]) {
      const res = await send(validSend(), inboxId, token);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "Inbox not found" });
    }
  });
});

test("an inbox of a service domain without a dot cannot send: 422 that names INBOXD_MAIL_DOMAIN, nothing stored", async () => {
  const dotless = await startMessageServer({ INBOXD_MAIL_DOMAIN: "localhost" });
  try {
    const { apiKey } = await seedOrganization(dotless.app);
    const local = await createInbox(dotless, apiKey);
    expect(local.email).toEndWith("@localhost");
    const res = await dotless.api.post(`/v1/inboxes/${local.id}/messages/send`, validSend(), apiKey);
    expect(res.status).toBe(422);
    expect(res.body.error).toContain("INBOXD_MAIL_DOMAIN");
    expect((await queryRow<{ n: number }>(dotless.app, "SELECT count(*) AS n FROM messages"))!.n).toBe(0);
  } finally {
    await dotless.cleanup();
  }
});
