// Sending as people expect it (issue 17), over real HTTP and SMTP: display names in To, Cc and
// Bcc and in the composed headers a remote MX (a loopback SMTP sink) receives, the inbox's name
// on From, "" as "no such part", the sender's display name kept on received mail, reply-all,
// forward, and 422s that name fields one way (`to[0]`, `attachments[0].content`).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { forwardSubject } from "../../src/messages/forward";
import { sendMail } from "../smtp/mail-client";
import { relatedMessage } from "../mail/related-message";
import { startOutboundWorld, type OutboundWorld } from "../outbound/world";

let w: OutboundWorld;
let sales: { id: string; email: string };
let support: { id: string; email: string };
beforeAll(async () => {
  w = await startOutboundWorld();
  w.mx("remote.test");
  sales = await createInbox("Sales Team");
  support = await createInbox("Support");
});
afterAll(() => w.close());

async function createInbox(name: string) {
  const res = await w.server.api.post("/v1/inboxes", { name }, w.apiKey);
  expect(res.status).toBe(201);
  return res.body as { id: string; email: string };
}

const path = (inbox: { id: string }, rest = "") => `/v1/inboxes/${inbox.id}/messages${rest}`;
const post = (route: string, body: unknown) => w.server.api.post(route, body, w.apiKey);
const get = async (route: string) => (await w.server.api.get(route, w.apiKey)).body;
const send = (body: Record<string, unknown>, from = sales) => post(path(from, "/send"), { subject: "Hello", text: "Plain body", html: "<p>HTML body</p>", ...body });

/** The header section, folded lines joined (RFC 5322 §2.2.3). */
const headersOf = (raw: Buffer | string) => {
  const text = raw.toString();
  return text.slice(0, text.indexOf("\r\n\r\n")).replace(/\r\n([ \t])/g, "$1");
};
const storedSource = async (messageId: string) => (await w.server.app.store.messages.rawSource(messageId))!.toString();
/** What the remote MX received for `address`, once the queue ran. */
async function delivered(address: string) {
  await w.queue.runDueNow();
  const got = w.sink.messages.filter((message) => message.rcptTo.includes(address));
  expect(got).toHaveLength(1);
  return got[0]!;
}

/** A message from a remote sender into `inbox` over SMTP, read back through the API. */
async function receive(inbox: { id: string; email: string }, header: string, subject: string, body = "Hello from afar.") {
  const raw = `${header}\r\nSubject: ${subject}\r\nMessage-ID: <${crypto.randomUUID()}@remote.test>\r\n\r\n${body}\r\n`;
  await sendMail(w.server.smtpPort, { from: "ada@remote.test", to: [inbox.email], raw });
  const summary = (await get(path(inbox, "?per=100"))).find((message: { subject: string }) => message.subject === subject);
  return get(path(inbox, `/${summary.id}`));
}

describe("display names", () => {
  test("accepted in to, cc and bcc; To and Cc headers keep them, From carries the inbox name; the message keeps bare addresses", async () => {
    const res = await send({
      to: ["Ada Lovelace <ada@remote.test>", "bob@remote.test"],
      cc: ['"Hopper, Grace" <Grace@Remote.test>'],
      bcc: ["Secret Person <hidden@remote.test>"],
      subject: "Names",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      from: sales.email,
      fromName: "Sales Team",
      to: ["ada@remote.test", "bob@remote.test"],
      cc: ["Grace@remote.test"],
      bcc: ["hidden@remote.test"],
    });
    expect(res.body.deliveries.map((d: { recipient: string }) => d.recipient)).toEqual(["ada@remote.test", "bob@remote.test", "Grace@remote.test", "hidden@remote.test"]);

    expect(await get(path(sales, `/${res.body.id}`))).toMatchObject({ fromName: "Sales Team", to: ["ada@remote.test", "bob@remote.test"] });

    const received = await delivered("ada@remote.test");
    // The Bcc recipient is in an envelope (RCPT TO), never in a header.
    await delivered("hidden@remote.test");
    const headers = headersOf(received.raw);
    expect(headers).toContain(`\r\nFrom: Sales Team <${sales.email}>\r\n`);
    expect(headers).toContain("\r\nTo: Ada Lovelace <ada@remote.test>, bob@remote.test\r\n");
    expect(headers).toContain('\r\nCc: "Hopper, Grace" <Grace@remote.test>\r\n');
    expect(received.raw.toString()).not.toContain("hidden@remote.test");
    expect(received.raw.toString()).not.toContain("Secret Person");
  });

  test("an inbox renamed while a send is composed: the message shows the name its From field was sent with", async () => {
    const renamed = await createInbox("Before");
    const store = w.server.app.store;
    const transactionBatched = store.transactionBatched;
    // The rename lands between the composition and the transaction that stores the message.
    store.transactionBatched = async (work) => {
      store.transactionBatched = transactionBatched;
      expect((await w.server.api.patch(`/v1/inboxes/${renamed.id}`, { name: "After" }, w.apiKey)).status).toBe(200);
      return transactionBatched(work);
    };
    const res = await send({ to: ["ada@remote.test"], subject: "Renamed meanwhile" }, renamed);
    expect(res.status).toBe(201);
    expect(headersOf(await storedSource(res.body.id))).toStartWith(`From: Before <${renamed.email}>\r\n`);
    expect(res.body.fromName).toBe("Before");
    expect((await get(path(renamed, `/${res.body.id}`))).fromName).toBe("Before");
  });

  test("a non-ASCII display name is sent as an encoded word and read back as written", async () => {
    const res = await send({ to: ["Zoë Müller <zoe@remote.test>"], subject: "Umlauts" });
    expect(res.status).toBe(201);
    const headers = headersOf((await delivered("zoe@remote.test")).raw);
    expect(headers).toMatch(/\r\nTo: =\?UTF-8\?[QB]\?[^\r\n]*\?= <zoe@remote\.test>\r\n/i);
  });
});

describe('"" is no such part', () => {
  test("an empty html sends text/plain only", async () => {
    const res = await send({ to: ["plain@remote.test"], html: "", subject: "Text only" });
    expect(res.status).toBe(201);
    const raw = (await delivered("plain@remote.test")).raw.toString();
    expect(headersOf(raw)).toMatch(/\r\nContent-Type: text\/plain; charset=utf-8(\r\n|$)/);
    expect(raw).not.toContain("text/html");
    expect(raw).not.toContain("multipart");
    expect(raw).toContain("Plain body");
  });

  test("an empty text with html sends text/html only", async () => {
    const res = await send({ to: ["html@remote.test"], text: "", subject: "HTML only" });
    expect(res.status).toBe(201);
    const raw = await storedSource(res.body.id);
    expect(headersOf(raw)).toMatch(/\r\nContent-Type: text\/html; charset=utf-8(\r\n|$)/);
    expect(raw).not.toContain("text/plain");
    expect(raw).not.toContain("multipart");
    expect(raw).toContain("<p>HTML body</p>");
  });

  test("with an attachment, an empty html leaves multipart/mixed with text/plain and the file, no HTML part", async () => {
    const res = await send({ to: ["mixed@remote.test"], html: "", subject: "Text and file", attachments: [{ content: Buffer.from("a,b\n1,2\n").toString("base64"), name: "data.csv" }] });
    expect(res.status).toBe(201);
    const raw = await storedSource(res.body.id);
    expect(raw).toContain("multipart/mixed");
    expect(raw).toContain("text/plain");
    expect(raw).not.toContain("multipart/alternative");
    expect(raw).not.toContain("text/html");
    expect(raw).toMatch(/filename=data\.csv/);
  });

  test("a local recipient's copy of a text-only message has no html", async () => {
    const res = await send({ to: [support.email], html: "", subject: "Local text only" });
    expect(res.status).toBe(201);
    const summary = (await get(path(support))).find((message: { subject: string }) => message.subject === "Local text only");
    const copy = await get(path(support, `/${summary.id}`));
    expect(copy).toMatchObject({ text: "Plain body", status: "received", from: sales.email, fromName: "Sales Team" });
    expect(copy).not.toHaveProperty("html");
  });
});

describe("received mail keeps the sender's display name", () => {
  test("beside from, as fromName; encoded words decoded; left out when the From field has none", async () => {
    const named = await receive(support, `From: Ada Lovelace <ada@remote.test>\r\nTo: ${support.email}`, "Named sender");
    expect(named).toMatchObject({ from: "ada@remote.test", fromName: "Ada Lovelace", status: "received" });
    const encoded = await receive(support, `From: =?utf-8?q?Zo=C3=AB_M=C3=BCller?= <zoe@remote.test>\r\nTo: ${support.email}`, "Encoded sender");
    expect(encoded).toMatchObject({ from: "zoe@remote.test", fromName: "Zoë Müller" });
    const bare = await receive(support, `From: plain@remote.test\r\nTo: ${support.email}`, "Bare sender");
    expect(bare.from).toBe("plain@remote.test");
    expect(bare).not.toHaveProperty("fromName");
  });
});

describe("internationalized addresses (RFC 6532) in received mail", () => {
  test("a UTF-8 local part in From, To or Cc is shown as written; a reply to it is 422 naming why, not 'no sender'", async () => {
    const message = await receive(support, `From: Jöe Bloggs <jöe@remote.test>\r\nTo: ${support.email}, Ünï <ünï@remote.test>\r\nCc: zoë@remote.test`, "Grüße");
    expect(message).toMatchObject({ from: "jöe@remote.test", fromName: "Jöe Bloggs", to: [support.email, "ünï@remote.test"], cc: ["zoë@remote.test"] });
    const reply = await post(path(support, `/${message.id}/reply`), { text: "Danke.", html: "" });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toContain("jöe@remote.test");
  });
});

describe("reply-all", () => {
  test("to the sender and the original To, Cc kept as Cc; the inbox itself (any +tag) and duplicates left out", async () => {
    const [local, domain] = support.email.split("@");
    const original = await receive(
      support,
      `From: Ada Lovelace <ada@remote.test>\r\nTo: Support <${support.email}>, Bob <bob@remote.test>\r\nCc: carol@remote.test, ${local}+sales@${domain}, ADA@remote.test, Bob@remote.test`,
      "Planning",
    );
    expect(original.to).toEqual([support.email, "bob@remote.test"]);

    const all = await post(path(support, `/${original.id}/reply`), { text: "Sounds good.", html: "<p>Sounds good.</p>", replyAll: true });
    expect(all.status).toBe(201);
    expect(all.body).toMatchObject({ threadId: original.threadId, subject: "Re: Planning", from: support.email, fromName: "Support", to: ["ada@remote.test", "bob@remote.test"], cc: ["carol@remote.test"], bcc: [] });
    expect(all.headers.get("ratelimit-remaining")).not.toBeNull();
    const headers = headersOf(await storedSource(all.body.id));
    expect(headers).toContain("\r\nTo: Ada Lovelace <ada@remote.test>, bob@remote.test\r\n");
    expect(headers).toContain("\r\nCc: carol@remote.test\r\n");
    expect(headers).toContain(`\r\nIn-Reply-To: ${(await storedSource(original.id)).match(/^Message-ID: (\S+)/m)![1]}\r\n`);

    const one = await post(path(support, `/${original.id}/reply`), { text: "Only you.", html: "", replyAll: false });
    expect(one.body).toMatchObject({ to: ["ada@remote.test"], cc: [] });
    const plain = await post(path(support, `/${original.id}/reply`), { text: "Only you.", html: "" });
    expect(plain.body).toMatchObject({ to: ["ada@remote.test"], cc: [] });
  });

  test("a received Reply-To (RFC 5322 §3.6.2) is shown and answered: a reply goes there, not to From; reply-all adds To and Cc; a reply draft alike", async () => {
    const original = await receive(
      support,
      `From: Contact form <noreply@forms.remote.test>\r\nReply-To: Customer <customer@remote.test>, second@remote.test\r\nTo: ${support.email}\r\nCc: carol@remote.test`,
      "Form submission",
    );
    expect(original).toMatchObject({ from: "noreply@forms.remote.test", replyTo: ["customer@remote.test", "second@remote.test"] });
    const one = await post(path(support, `/${original.id}/reply`), { text: "Thanks.", html: "" });
    expect(one.body).toMatchObject({ to: ["customer@remote.test", "second@remote.test"], cc: [] });
    expect(one.body).not.toHaveProperty("replyTo");
    const all = await post(path(support, `/${original.id}/reply`), { text: "Thanks.", html: "", replyAll: true });
    expect(all.body).toMatchObject({ to: ["customer@remote.test", "second@remote.test"], cc: ["carol@remote.test"] });
    const draft = await post(`/v1/inboxes/${support.id}/drafts`, { inReplyToMessageId: original.id });
    expect(draft.body).toMatchObject({ to: ["customer@remote.test", "second@remote.test"], subject: "Re: Form submission" });
    // Without a Reply-To the field is left out, and replies go to From (the test above).
    expect(await receive(support, `From: ada@remote.test\r\nTo: ${support.email}`, "No reply-to")).not.toHaveProperty("replyTo");
  });

  test("on a message the inbox sent: its recipients, as a plain reply", async () => {
    const sent = (await send({ to: ["x@remote.test", "y@remote.test"], cc: ["z@remote.test"], subject: "Ours" })).body;
    const res = await post(path(sales, `/${sent.id}/reply`), { text: "Again.", html: "", replyAll: true });
    expect(res.body).toMatchObject({ to: ["x@remote.test", "y@remote.test"], cc: ["z@remote.test"], threadId: sent.threadId });
  });
});

describe("forward", () => {
  test("Fwd: subject, the note above the forwarded block, attachments kept, a new thread; local recipients get a copy", async () => {
    const file = Buffer.from("%PDF-1.4 quarterly numbers\n");
    const original = await send({ to: [support.email], subject: "Quarterly", attachments: [{ content: file.toString("base64"), name: "q3.pdf" }] });
    expect(original.status).toBe(201);
    const copySummary = (await get(path(support))).find((message: { subject: string }) => message.subject === "Quarterly");
    const copy = await get(path(support, `/${copySummary.id}`));

    const res = await post(path(support, `/${copy.id}/forward`), { to: ["Dan Brown <dan@remote.test>"], cc: [sales.email], text: "FYI, see below." });
    expect(res.status).toBe(201);
    expect(res.headers.get("ratelimit-remaining")).not.toBeNull();
    const forward = res.body;
    expect(forward).toMatchObject({ subject: "Fwd: Quarterly", status: "sent", from: support.email, fromName: "Support", to: ["dan@remote.test"], cc: [sales.email] });
    expect(forward.threadId).not.toBe(copy.threadId);
    expect(forward.text).toBe(
      [
        "FYI, see below.",
        "",
        "---------- Forwarded message ---------",
        `From: Sales Team <${sales.email}>`,
        `Date: ${new Date(copy.createdAt).toUTCString()}`,
        "Subject: Quarterly",
        `To: ${support.email}`,
        "",
        "Plain body",
      ].join("\n"),
    );
    expect(forward.html).toStartWith("<div>FYI, see below.</div>");
    expect(forward.html).toContain("---------- Forwarded message ---------");
    expect(forward.html).toContain("<strong>Sales Team</strong> &lt;");
    expect(forward.html).toEndWith("<p>HTML body</p>");
    expect(forward.attachments).toEqual([expect.objectContaining({ name: "q3.pdf", contentType: "application/pdf", content: file.toString("base64") })]);
    expect(forward.attachments[0].id).not.toBe(copy.attachments[0].id);
    expect(await get(`/v1/inboxes/${support.id}/threads/${forward.threadId}`)).toMatchObject({ subject: "Fwd: Quarterly", messageCount: 1 });

    const received = await delivered("dan@remote.test");
    const raw = received.raw.toString();
    const headers = headersOf(raw);
    expect(headers).toContain("\r\nSubject: Fwd: Quarterly\r\n");
    expect(headers).toContain("\r\nTo: Dan Brown <dan@remote.test>\r\n");
    expect(headers).not.toMatch(/\r\n(In-Reply-To|References):/i);
    expect(raw).toMatch(/filename=q3\.pdf/);
    expect(raw).toContain(file.toString("base64").slice(0, 20));

    // The sales inbox on this server gets its copy at once, in a thread of its own.
    const salesCopySummary = (await get(path(sales))).find((message: { subject: string }) => message.subject === "Fwd: Quarterly");
    const salesCopy = await get(path(sales, `/${salesCopySummary.id}`));
    expect(salesCopy).toMatchObject({ status: "received", from: support.email, fromName: "Support", fromInboxId: support.id });
    expect(salesCopy.threadId).not.toBe(original.body.threadId);
    expect(salesCopy.attachments[0]).toMatchObject({ name: "q3.pdf", content: file.toString("base64") });
  });

  test("without a note the block comes first; a text-only original forwards as text/plain", async () => {
    const original = await receive(support, `From: Ada Lovelace <ada@remote.test>\r\nTo: ${support.email}`, "Fw: Plain news", "Line one.");
    const res = await post(path(support, `/${original.id}/forward`), { to: ["eve@remote.test"] });
    expect(res.status).toBe(201);
    expect(res.body.subject).toBe("Fw: Plain news");
    expect(res.body.text).toStartWith("---------- Forwarded message ---------\nFrom: Ada Lovelace <ada@remote.test>\n");
    expect(res.body.text).toContain("\n\nLine one.");
    const raw = await storedSource(res.body.id);
    expect(raw).not.toContain("text/html");
    expect(forwardSubject("FWD: x")).toBe("FWD: x");
    expect(forwardSubject("Re: x")).toBe("Fwd: Re: x");
  });

  test("an inline image is forwarded inline, with its Content-ID, so that the forwarded HTML still shows it", async () => {
    const image = Buffer.from("GIF89a inline logo bytes");
    const raw = relatedMessage({
      headers: ["From: ada@remote.test", "Subject: Newsletter with a logo", `Message-ID: <${crypto.randomUUID()}@remote.test>`],
      html: '<p>Hello</p><img src="cid:logo.1@remote.test">',
      image,
      contentType: "image/gif; name=logo.gif",
      contentId: "logo.1@remote.test",
      filename: "logo.gif",
    });
    await sendMail(w.server.smtpPort, { from: "ada@remote.test", to: [support.email], raw });
    const received = (await get(path(support, "?per=100"))).find((message: { subject: string }) => message.subject === "Newsletter with a logo");
    const res = await post(path(support, `/${received.id}/forward`), { to: ["erin@remote.test"], text: "Look at this." });
    expect(res.status).toBe(201);
    expect(res.body.attachments).toEqual([expect.objectContaining({ name: "logo.gif", contentType: "image/gif", inline: true, contentId: "logo.1@remote.test" })]);
    expect(res.body.html).toContain('src="cid:logo.1@remote.test"');
    const sent = (await delivered("erin@remote.test")).raw.toString();
    expect(sent).toContain("Content-ID: <logo.1@remote.test>");
    expect(sent).toMatch(/Content-Disposition: inline/);
  });

  test("a received subject that decodes to a line break is forwarded on one line, as the wire shows it and a reply gets it", async () => {
    const raw = `From: ada@remote.test\r\nSubject: =?utf-8?Q?Quarterly=0Aforecast?=\r\nMessage-ID: <${crypto.randomUUID()}@remote.test>\r\n\r\nFigures.\r\n`;
    await sendMail(w.server.smtpPort, { from: "ada@remote.test", to: [support.email], raw });
    const received = (await get(path(support, "?per=100"))).find((message: { subject: string }) => message.subject === "Quarterly\nforecast");
    const res = await post(path(support, `/${received.id}/forward`), { to: ["dan@remote.test"] });
    expect(res.status).toBe(201);
    expect(res.body.subject).toBe("Fwd: Quarterly forecast");
    expect((await get(`/v1/inboxes/${support.id}/threads/${res.body.threadId}`)).subject).toBe("Fwd: Quarterly forecast");
  });

  test("an unknown message is 404 Message not found, an unknown inbox 404 Inbox not found", async () => {
    expect((await post(path(support, "/msg_unknown/forward"), { to: ["a@remote.test"] })).body).toEqual({ error: "Message not found" });
    const res = await post("/v1/inboxes/inb_unknown/messages/msg_unknown/forward", { to: ["a@remote.test"] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Inbox not found" });
  });
});

describe("422 names fields one way", () => {
  test.each([
    ["send: a bad recipient entry", "/send", { to: ["ok@remote.test", "Bad <nope>"] }, "to[1]: must be an email address such as name@example.com or Name <name@example.com>"],
    ["send: a recipient of the wrong type", "/send", { to: [42] }, "to[0]: must be an email address such as name@example.com or Name <name@example.com>"],
    ["send: a bad cc entry", "/send", { cc: ["a@remote.test, b@remote.test"] }, "cc[0]: must be an email address such as name@example.com or Name <name@example.com>"],
    ["send: to missing", "/send", { to: undefined }, "to: must be an array of 1 to 50 email addresses"],
    ["send: attachment content of the wrong type", "/send", { attachments: [{ content: "QQ==" }, { content: 5 }] }, "attachments[1].content: must be a base64 string"],
    ["send: attachment content that is not base64", "/send", { attachments: [{ content: "not base64!" }] }, "attachments[0].content: must be base64"],
    ["send: attachment name of the wrong type", "/send", { attachments: [{ content: "QQ==", name: 7 }] }, "attachments[0].name: must be a file name of at most 255 characters"],
  ])("%s", async (_name, route, change, error) => {
    const res = await post(path(sales, route), { to: ["ok@remote.test"], subject: "Hello", text: "a", html: "", ...change });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error });
  });

  test("forward and reply bodies alike", async () => {
    const sent = (await send({ to: ["fields@remote.test"], subject: "Fields" })).body;
    const forward = (body: unknown) => post(path(sales, `/${sent.id}/forward`), body);
    expect((await forward({ to: [] })).body).toEqual({ error: "to: must be an array of 1 to 50 email addresses" });
    expect((await forward({ to: ["a@remote.test"], bcc: ["x"] })).body).toEqual({ error: "bcc[0]: must be an email address such as name@example.com or Name <name@example.com>" });
    expect((await forward({ to: ["a@remote.test"], text: 5 })).body).toEqual({ error: "text: must be a string" });
    const reply = await post(path(sales, `/${sent.id}/reply`), { text: "a", html: "b", replyAll: "yes" });
    expect(reply.status).toBe(422);
    expect(reply.body).toEqual({ error: "replyAll: must be true or false" });
  });
});
