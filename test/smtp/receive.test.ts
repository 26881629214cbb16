// Inbound SMTP against the real server over real sockets: delivery in plain text and over
// STARTTLS, the recipient policy, parsing round trips through the API, threading, limits, the
// SMTP smuggling vectors, and the authentication results with a DNS server on loopback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { domainToASCII } from "node:url";
import { randomBytes, X509Certificate } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dkimSign, sealMessage } from "mailauth";
import MailComposer from "nodemailer/lib/mail-composer";
import { dkimTxtValue, generateDkimKeys } from "../../src/dkim/keys";
import { signMessage } from "../../src/dkim/sign";
import { insertInbox } from "../../src/inboxes/service";
import { parseMessage } from "../../src/mail/parse";
import { alreadyReceived, storeReceivedMessage } from "../../src/messages/receive";
import { returnPathFor } from "../../src/outbound/return-path";
import { loadTlsCertificate } from "../../src/smtp/tls";
import { RESEND_LOOKUP_COPIES } from "../../src/store/resend-lookup";
import type { Inbox } from "../../src/inboxes/present";
import { apiClient, databaseOf, eventually, onPostgres, queryRow, queryRows, seedOrganization, sqliteOnly, startTestServer, tempDir, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { sendMail } from "./mail-client";
import { openSession, startTransaction } from "./raw-client";

const MAX_SIZE = 256 * 1024;
let dns: DnsServer;
let server: TestServer;
let apiKey: string;
let bob: Inbox;
let carol: Inbox;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_SMTP_MAX_SIZE: String(MAX_SIZE) } });
  const org = await seedOrganization(server.app);
  apiKey = org.apiKey;
  bob = await server.app.store.transaction((tx) => insertInbox(server.app, tx, org.organizationId, { email: "bob@inboxd.test" }));
  carol = await server.app.store.transaction((tx) => insertInbox(server.app, tx, org.organizationId, { email: "carol@inboxd.test" }));
});

afterAll(async () => {
  await server.cleanup();
  await dns.close();
});

const plainMessage = (subject: string, extraHeaders = "") =>
  `From: Alice <alice@sender.test>\r\nTo: bob@inboxd.test\r\nSubject: ${subject}\r\nMessage-ID: <${crypto.randomUUID()}@sender.test>\r\n${extraHeaders}\r\nHello Bob.\r\n`;

async function messagesOf(inbox: Inbox): Promise<any[]> {
  const list = await server.api.get(`/v1/inboxes/${inbox.id}/messages?per=100`, apiKey);
  expect(list.status).toBe(200);
  return list.body;
}

async function findBySubject(inbox: Inbox, subject: string): Promise<any | undefined> {
  const summary = (await messagesOf(inbox)).find((message) => message.subject === subject);
  if (!summary) return undefined;
  return (await server.api.get(`/v1/inboxes/${inbox.id}/messages/${summary.id}`, apiKey)).body;
}

const rawSource = async (messageId: string) => (await server.app.store.messages.rawSource(messageId))!.toString("latin1");

describe("delivery", () => {
  test("a message sent again after a lost 250 (same Message-ID) is accepted once more but stored once", async () => {
    const raw = `From: alice@sender.test\r\nTo: bob@inboxd.test, carol@inboxd.test\r\nSubject: retried after a lost reply\r\nMessage-ID: <${crypto.randomUUID()}@sender.test>\r\n\r\nOnce.\r\n`;
    for (let i = 0; i < 2; i++) {
      const sent = await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test", "carol@inboxd.test"], raw });
      expect(sent.response).toStartWith("250 ");
    }
    for (const inbox of [bob, carol]) expect((await messagesOf(inbox)).filter((message) => message.subject === "retried after a lost reply")).toHaveLength(1);
  });

  test("two different messages under one Message-ID are both stored: a resend is the same sender's same subject and body", async () => {
    const messageId = `<reused-${crypto.randomUUID()}@sender.test>`;
    const invoice = (n: number, extraField = "") => `From: billing@sender.test\r\nTo: bob@inboxd.test\r\nSubject: invoice ${n} under one id\r\nMessage-ID: ${messageId}\r\n${extraField}\r\nInvoice ${n}.\r\n`;
    // The second from another sender, as a third party who predicted the id would send it; the
    // third a resend of the second, signed anew (a field that differs between attempts).
    for (const [from, raw] of [["alice@sender.test", invoice(1)], ["billing@sender.test", invoice(2)], ["billing@sender.test", invoice(2, "X-Attempt: 2\r\n")]] as const) {
      expect((await sendMail(server.smtpPort, { from, to: ["bob@inboxd.test"], raw })).response).toStartWith("250 ");
    }
    const subjects = async () => (await messagesOf(bob)).map((message) => message.subject).filter((subject: string) => subject.endsWith("under one id"));
    expect((await eventually("both stored", subjects, (found) => found.length >= 2)).sort()).toEqual(["invoice 1 under one id", "invoice 2 under one id"]);
    // The same message from another envelope sender is another delivery (a list's copy beside the author's): kept too.
    expect((await sendMail(server.smtpPort, { from: "list@sender.test", to: ["bob@inboxd.test"], raw: invoice(1) })).response).toStartWith("250 ");
    expect(await eventually("the list's copy stored", subjects, (found) => found.length >= 3)).toHaveLength(3);
  });

  test("a copy sent first under a message's id with a Reply-To or From of its own does not pass the message off as its resend: both are stored", async () => {
    const messageId = `<forged-${crypto.randomUUID()}@sender.test>`;
    const payment = (fields: string) => `${fields}To: bob@inboxd.test\r\nSubject: new bank details ${messageId}\r\nMessage-ID: ${messageId}\r\n\r\nPlease reply to confirm.\r\n`;
    const copies = [payment("From: billing@sender.test\r\nReply-To: thief@elsewhere.test\r\n"), payment("From: billing@sender.test\r\n"), payment("From: bi11ing@sender.test\r\n")];
    for (const raw of copies) expect((await sendMail(server.smtpPort, { from: "billing@sender.test", to: ["bob@inboxd.test"], raw })).response).toStartWith("250 ");
    const stored = async () => (await messagesOf(bob)).filter((message) => message.subject === `new bank details ${messageId}`);
    expect(await eventually("all three stored", stored, (found) => found.length >= 3)).toHaveLength(3);
  });

  test("a copy delivered from another inbox of this server is no resend of a message that comes later under its Message-ID", async () => {
    const sent = await server.api.post(`/v1/inboxes/${carol.id}/messages/send`, { to: ["bob@inboxd.test"], subject: "local first", text: "From Carol.", html: "" }, apiKey);
    expect(sent.status).toBe(201);
    const localCopy = (await messagesOf(bob)).find((message) => message.subject === "local first");
    const { message_id_header: messageId } = (await queryRow<{ message_id_header: string }>(server.app, "SELECT message_id_header FROM messages WHERE id = ?", localCopy.id))!;
    // The list's copy of the same message, with its footer: another message, stored beside it.
    const listCopy = `From: carol@inboxd.test\r\nTo: team@lists.test\r\nSubject: [team] local first\r\nMessage-ID: ${messageId}\r\n\r\nFrom Carol.\r\n-- \r\nteam mailing list\r\n`;
    expect((await sendMail(server.smtpPort, { from: "team-bounces@lists.test", to: ["bob@inboxd.test"], raw: listCopy })).response).toStartWith("250 ");
    expect((await messagesOf(bob)).map((message) => message.subject).filter((subject: string) => subject.endsWith("local first")).sort()).toEqual(["[team] local first", "local first"]);
  });

  test("a resend look-up reads at most RESEND_LOOKUP_COPIES copies under one Message-ID: thousands of different messages under one id cannot make each next one read them all", async () => {
    const { app } = server;
    const inbox = (await app.store.inboxes.find(bob.organizationId, bob.id))!;
    const messageId = `<one-id-${crypto.randomUUID()}@sender.test>`;
    const parsed = await parseMessage(Buffer.from(`From: alice@sender.test\r\nSubject: one of many\r\nMessage-ID: ${messageId}\r\n\r\nHi.\r\n`));
    const digestOf = (n: number) => `digest ${n}`;
    for (let n = 0; n <= RESEND_LOOKUP_COPIES; n++) {
      await app.store.transaction((tx) => storeReceivedMessage(app, tx, { inbox, parsed, raw: Buffer.from(`copy ${n}`), receivedDigest: digestOf(n) }));
    }
    // Which copies are read is the engine's index order; the one not read would be stored again if resent, never dropped.
    let found = 0;
    for (let n = 0; n <= RESEND_LOOKUP_COPIES; n++) if (await alreadyReceived(app.store, inbox.id, parsed, digestOf(n))) found++;
    expect(found).toBe(RESEND_LOOKUP_COPIES);
  });

  test("Message-ID: <> names no message: two messages with it are both stored", async () => {
    const raw = (n: number) => `From: alice@sender.test\r\nTo: bob@inboxd.test\r\nSubject: empty id ${n}\r\nMessage-ID: <>\r\n\r\nHi.\r\n`;
    for (const n of [1, 2]) await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: raw(n) });
    const stored = await eventually("both stored", async () => (await messagesOf(bob)).filter((message) => message.subject.startsWith("empty id ")), (found) => found.length >= 2);
    expect(stored).toHaveLength(2);
    for (const { id } of stored) expect(await queryRow(server.app, "SELECT message_id_header FROM messages WHERE id = ?", id)).toEqual({ message_id_header: null });
  });

  test("a NUL decoded out of the message (quoted-printable, encoded words) is left out of what is stored, on either engine", async () => {
    const raw = "From: =?utf-8?Q?Al=00ice?= <alice@sender.test>\r\nTo: bob@inboxd.test\r\nSubject: =?utf-8?Q?nul=00inside?=\r\nMessage-ID: <nul=00@sender.test>\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nHello=00Bob.\r\n";
    expect((await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw })).response).toStartWith("250 ");
    const message = await eventually("the message stored", () => findBySubject(bob, "nulinside"), (found) => found !== undefined);
    expect(message).toMatchObject({ fromName: "Alice", text: "HelloBob.\n" });
  });

  test("two different messages without a Message-ID are both stored", async () => {
    const raw = "From: alice@sender.test\r\nTo: bob@inboxd.test\r\nSubject: no message id\r\n\r\nHi.\r\n";
    for (let i = 0; i < 2; i++) await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw });
    expect((await messagesOf(bob)).filter((message) => message.subject === "no message id")).toHaveLength(2);
  });

  test("plain SMTP: the message is stored for the inbox, with its message.received event, once analysed", async () => {
    const sent = await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: plainMessage("plain delivery") });
    const transaction = /^250 2\.6\.0 Message accepted as (\S+)$/.exec(sent.response)![1];
    expect(sent.secure).toBe(false);
    const message = await findBySubject(bob, "plain delivery");
    expect(message).toMatchObject({ status: "received", from: "alice@sender.test", to: ["bob@inboxd.test"], inboxId: bob.id, toInboxId: bob.id, text: "Hello Bob.\n" });
    const event = await queryRow<{ type: string }>(server.app, "SELECT type FROM events WHERE message_id = ?", message.id);
    expect(event?.type).toBe("message.received");
    expect(await rawSource(message.id)).toMatch(/^Return-Path: <alice@sender\.test>\r\nAuthentication-Results: mx\.inboxd\.test;[^]*\r\nReceived: from client\.example \(\[127\.0\.0\.1\]\)\r\n\tby mx\.inboxd\.test \(inboxd\) with ESMTP id \S+\r\n\tfor <bob@inboxd\.test>; [^\r]+\r\nFrom: Alice/);
    expect(await rawSource(message.id)).toContain(`with ESMTP id ${transaction}\r\n`);
  });

  test("RFC 5321 §4.1.1.11: MAIL and RCPT parameters of extensions not offered are 555, those offered are taken; after HELO none are", async () => {
    const session = await openSession(server.smtpPort);
    expect((await session.command("EHLO client.example")).code).toBe(250);
    for (const [line, reply] of [
      ["MAIL FROM:<alice@sender.test> FOO=BAR", "555 5.5.4 Unsupported parameter FOO"],
      ["MAIL FROM:<alice@sender.test> RET=HDRS ENVID=x", "555 5.5.4 Unsupported parameter RET"],
      ["MAIL FROM:<alice@sender.test> SIZE=100 BODY=8BITMIME SMTPUTF8", "250 2.1.0 Accepted"],
      ["RCPT TO:<bob@inboxd.test> NOTIFY=SUCCESS ORCPT=rfc822;bob@inboxd.test", "555 5.5.4 Unsupported parameter NOTIFY"],
      ["RCPT TO:<bob@inboxd.test>", "250 2.1.5 Accepted"],
    ]) {
      expect((await session.command(line!)).text).toBe(reply!);
    }
    session.end();
    const helo = await openSession(server.smtpPort);
    expect((await helo.command("HELO client.example")).code).toBe(250);
    expect((await helo.command("MAIL FROM:<alice@sender.test> SIZE=100")).text).toBe("555 5.5.4 Unsupported parameter SIZE");
    expect((await helo.command("MAIL FROM:<alice@sender.test>")).code).toBe(250);
    helo.end();
  });

  test("RFC 5321 §4.1.2, RFC 6531 §3.3: a non-ASCII address needs SMTPUTF8 at MAIL, and bytes that are not UTF-8 are refused", async () => {
    const notUtf8 = (before: string, after: string) => Buffer.concat([Buffer.from(before), Buffer.from([0xf6]), Buffer.from(`${after}\r\n`)]);
    const session = await openSession(server.smtpPort);
    expect((await session.command("EHLO client.example")).code).toBe(250);
    expect((await session.command("MAIL FROM:<zoë@sender.test>")).text).toBe("553 5.6.7 A non-ASCII address needs the SMTPUTF8 parameter of MAIL (RFC 6531 section 3.4)");
    session.write(notUtf8("MAIL FROM:<j", "e@sender.test> SMTPUTF8"));
    expect((await session.reply()).text).toBe("501 5.1.7 Bad address syntax: not UTF-8");
    expect((await session.command("MAIL FROM:<zoë@sender.test> SMTPUTF8")).code).toBe(250);
    session.write(notUtf8("RCPT TO:<b", "b@inboxd.test>"));
    expect((await session.reply()).text).toBe("501 5.1.3 Bad address syntax: not UTF-8");
    expect((await session.command("RCPT TO:<bob@inboxd.test>")).code).toBe(250);
    session.end();
    const plain = await openSession(server.smtpPort);
    expect((await plain.command("EHLO client.example")).code).toBe(250);
    // An IDN domain's A-labels are ASCII on the wire (smtp-server hands them over as U-labels).
    expect((await plain.command("MAIL FROM:<alice@xn--mller-kva.example>")).code).toBe(250);
    expect((await plain.command("RCPT TO:<bob@xn--bcher-kva.example>")).text).toStartWith("550 5.7.1 ");
    expect((await plain.command("RCPT TO:<bøb@inboxd.test>")).text).toStartWith("553 5.6.7 ");
    // A domain in UTF-8 on the wire is no ASCII address either; full-width letters, which IDNA would map to ASCII, no host name.
    expect((await plain.command("RCPT TO:<bob@ｉｎｂｏｘｄ.test>")).text).toStartWith("501 5.1.3 ");
    expect((await plain.command("RCPT TO:<bob@bücher.example>")).text).toStartWith("553 5.6.7 ");
    expect((await plain.command("RSET")).code).toBe(250);
    expect((await plain.command("MAIL FROM:<joe@bücher.example>")).text).toStartWith("553 5.6.7 ");
    plain.end();
  });

  test("a domain whose A-label decodes to nothing (RFC 5890 §2.3.2.1) is refused at MAIL and RCPT, not read as another domain", async () => {
    const session = await openSession(server.smtpPort);
    expect((await session.command("EHLO client.example")).code).toBe(250);
    // An A-label that decodes to nothing was `x@.blocked.example`, past a block of blocked.example.
    expect((await session.command("MAIL FROM:<x@xn--mail.blocked.example>")).text).toBe("501 5.1.7 Bad address syntax: the domain is no host name");
    expect((await session.command("MAIL FROM:<alice@sender.test>")).code).toBe(250);
    expect((await session.command("RCPT TO:<bob@xn--mail.inboxd.test>")).text).toBe("501 5.1.3 Bad address syntax: the domain is no host name");
    expect((await session.command("RCPT TO:<bob@InboxD.Test>")).code).toBe(250);
    session.end();
    // A valid A-label in capitals, which smtp-server leaves undecoded, is a host name all the same.
    const capitals = await openSession(server.smtpPort);
    expect((await capitals.command("EHLO client.example")).code).toBe(250);
    expect((await capitals.command("MAIL FROM:<a@XN--MNCHEN-3YA.DE>")).code).toBe(250);
    capitals.end();
  });

  test("RFC 5891 §5.4: a name IDNA would only map onto a hosted domain (full-width letters, U+00AD, U+017F, or an A-label of them) is refused, not stored there", async () => {
    const session = await openSession(server.smtpPort);
    expect((await session.command("EHLO client.example")).code).toBe(250);
    expect((await session.command("MAIL FROM:<x@xn--ni7cenug8c.test>")).text).toBe("501 5.1.7 Bad address syntax: the domain is no host name");
    expect((await session.command("MAIL FROM:<alice@sender.test>")).code).toBe(250);
    // The A-labels of full-width "inboxd" and of "inbox" U+00AD "d".
    for (const fake of ["xn--ni7cenug8c.test", "xn--inboxd-gja.test"]) expect((await session.command(`RCPT TO:<bob@${fake}>`)).text).toBe("501 5.1.3 Bad address syntax: the domain is no host name");
    expect((await session.command("RCPT TO:<bob@inboxd.test>")).code).toBe(250);
    session.end();
    const utf8 = await openSession(server.smtpPort);
    expect((await utf8.command("EHLO client.example")).code).toBe(250);
    expect((await utf8.command("MAIL FROM:<alice@sender.test> SMTPUTF8")).code).toBe(250);
    for (const mapped of ["inboxd.te\u017ft", "\uff49\uff4e\uff42\uff4f\uff58\uff44.test", "inbox\u00add.test"]) {
      expect((await utf8.command(`RCPT TO:<bob@${mapped}>`)).text).toBe("501 5.1.3 Bad address syntax: the domain is no host name");
    }
    // A U-label as IDNA2008 writes it, or in capitals or NFD, is the domain it names; so are Cherokee
    // and Greek names, whose case IDNA folds otherwise than JavaScript lowers it.
    for (const name of ["bücher.example", "BÜCHER.example", "bu\u0308cher.example", "ᏣᎳᎩ.example", "ꮳꮃꭹ.example", "ΑΣ.example", "ας.example"]) {
      expect((await utf8.command(`RCPT TO:<bob@${name}>`)).text).toStartWith("550 5.7.1 ");
    }
    utf8.end();
    const aLabels = await openSession(server.smtpPort);
    expect((await aLabels.command("EHLO client.example")).code).toBe(250);
    expect((await aLabels.command(`MAIL FROM:<bob@${domainToASCII("ꮳꮃꭹ.example")}>`)).code).toBe(250);
    aLabels.end();
  });

  // Bun's own client sockets cannot half-close and keep reading: the kernel's shutdown(SHUT_WR), from Python.
  const noPython = Bun.which("python3") ? "" : " — skipped: python3 is missing (.ci/run installs it)";
  test.skipIf(noPython !== "")(`a client that ends its side of the connection after its message still gets the reply to it, then the connection closes${noPython}`, async () => {
    for (const [subject, quit] of [["half-closed after QUIT", "QUIT\r\n"], ["half-closed without QUIT", ""]]) {
      const dialogue = Bun.spawn(["python3", join(import.meta.dir, "half-close-client.py"), String(server.smtpPort), `From: alice@sender.test\r\nSubject: ${subject}\r\n\r\nBye.\r\n.\r\n${quit}`], { stdout: "pipe", stderr: "inherit" });
      const afterHalfClose = await new Response(dialogue.stdout).text();
      expect(await dialogue.exited).toBe(0);
      expect(afterHalfClose).toMatch(quit ? /^250 2\.6\.0 Message accepted as \S+\r\n221 [^\r]*\r\n$/ : /^250 2\.6\.0 Message accepted as \S+\r\n$/);
      expect(await findBySubject(bob, subject)).toBeDefined();
    }
  });

  test("a session whose 20th recipient since its last accepted message is refused is closed (Postfix's smtpd_hard_error_limit): a harvester learns 20 addresses per connection, not a dictionary", async () => {
    const session = await openSession(server.smtpPort);
    expect((await session.command("EHLO client.example")).code).toBe(250);
    const refuseNineteen = async (round: number) => {
      expect((await session.command("MAIL FROM:<alice@sender.test>")).code).toBe(250);
      for (let i = 1; i < 20; i++) expect((await session.command(`RCPT TO:<nobody${round}-${i}@inboxd.test>`)).code).toBe(550);
      // An accepted recipient between them counts for nothing, and the session still goes on.
      expect((await session.command("RCPT TO:<bob@inboxd.test>")).code).toBe(250);
    };
    // A connection reused for many messages: an accepted one starts the count anew.
    await refuseNineteen(1);
    expect((await session.command("DATA")).code).toBe(354);
    expect((await session.command("Subject: after 19 refused\r\n\r\nHi.\r\n.")).code).toBe(250);
    await refuseNineteen(2);
    expect((await session.command("RCPT TO:<nobody2-20@inboxd.test>")).text).toStartWith("550 5.1.1 ");
    expect((await session.reply()).text).toBe("421 4.7.0 mx.inboxd.test Too many refused recipients, closing connection");
    await session.closed();
  });

  test("RFC 6531 §3.7.3: a transaction with SMTPUTF8 is received `with UTF8SMTP`", async () => {
    const session = await openSession(server.smtpPort);
    for (const line of ["EHLO client.example", "MAIL FROM:<alice@sender.test> SMTPUTF8", "RCPT TO:<bob@inboxd.test>"]) expect((await session.command(line)).code).toBe(250);
    expect((await session.command("DATA")).code).toBe(354);
    expect((await session.command("From: Zoë <alice@sender.test>\r\nSubject: utf8 transaction\r\n\r\nHi.\r\n.")).code).toBe(250);
    session.end();
    const message = await findBySubject(bob, "utf8 transaction");
    expect(await rawSource(message.id)).toMatch(/\tby mx\.inboxd\.test \(inboxd\) with UTF8SMTP id /);
  });

  test("accepted first: the message shows in the API within tens of milliseconds of its 250", async () => {
    // A client of its own: the harness's lets the inbound queue finish before each request.
    const api = apiClient(server.api.baseUrl);
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const subject = `visible soon ${i}`;
      await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: plainMessage(subject) });
      const acknowledgedAt = performance.now();
      await eventually(`"${subject}" in the API`, async () => (await api.get(`/v1/inboxes/${bob.id}/messages?per=10`, apiKey)).body, (list: any[]) => list.some((message) => message.subject === subject), 5_000, 1);
      delays.push(performance.now() - acknowledgedAt);
    }
    // Tens of milliseconds on an idle machine; the bound leaves room for a busy one.
    expect(delays.sort((a, b) => a - b)[2]).toBeLessThan(250);
  });

  test("STARTTLS with the self-signed certificate generated into the data dir, once", async () => {
    const ca = readFileSync(join(server.dataDir, "smtp-tls.crt"), "utf8");
    expect(loadTlsCertificate(server.app).cert).toBe(ca);
    const sent = await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: plainMessage("over tls"), tls: { mode: "starttls", ca, servername: "mx.inboxd.test" } });
    expect(sent.secure).toBe(true);
    const message = await findBySubject(bob, "over tls");
    expect(await rawSource(message.id)).toMatch(/\r\nReceived: from client\.example \(\[127\.0\.0\.1\]\)\r\n\t\(using TLSv1\.[23] with cipher \S+\)\r\n\tby mx\.inboxd\.test \(inboxd\) with ESMTPS id /);
  });

  test("a self-signed certificate that cannot serve (damaged, without its key, for another host) is made again, and kept while it can", async () => {
    const dataDir = tempDir("self-signed");
    const at = (hostname: string) => ({ ...server.app, config: { ...server.app.config, dataDir, hostname } });
    const made = loadTlsCertificate(at("mx.inboxd.test"));
    expect(loadTlsCertificate(at("mx.inboxd.test")).cert).toBe(made.cert);
    const current = () => new X509Certificate(readFileSync(join(dataDir, "smtp-tls.crt"), "utf8"));
    const renamed = loadTlsCertificate(at("mail.inboxd.test"));
    expect(current().checkHost("mail.inboxd.test")).toBe("mail.inboxd.test");
    writeFileSync(join(dataDir, "smtp-tls.crt"), "garbage");
    expect(loadTlsCertificate(at("mail.inboxd.test")).cert).not.toBe(renamed.cert);
    rmSync(join(dataDir, "smtp-tls.key"));
    const again = loadTlsCertificate(at("mail.inboxd.test"));
    expect(readFileSync(join(dataDir, "smtp-tls.key"), "utf8")).toBe(again.key);
    expect(current().checkHost("mail.inboxd.test")).toBe("mail.inboxd.test");
  });

  test("EHLO offers SIZE, 8BITMIME, SMTPUTF8, PIPELINING, STARTTLS and ENHANCEDSTATUSCODES, and no AUTH", async () => {
    const session = await openSession(server.smtpPort);
    const ehlo = await session.command("EHLO client.example");
    session.end();
    expect(ehlo.lines[0]).toStartWith("250-mx.inboxd.test");
    const extensions = ehlo.lines.slice(1).map((line) => line.slice(4));
    expect(extensions).toEqual(expect.arrayContaining(["PIPELINING", "8BITMIME", "SMTPUTF8", "ENHANCEDSTATUSCODES", "STARTTLS", `SIZE ${MAX_SIZE}`]));
    expect(extensions.some((extension) => extension.startsWith("AUTH"))).toBe(false);
  });

  test("one copy per recipient inbox: two inboxes get one each, two tags of one inbox get one", async () => {
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob+a@inboxd.test", "BOB+b@inboxd.test", "carol@inboxd.test"], raw: plainMessage("to several") });
    const forBob = (await messagesOf(bob)).filter((message) => message.subject === "to several");
    const forCarol = (await messagesOf(carol)).filter((message) => message.subject === "to several");
    expect([forBob.length, forCarol.length]).toEqual([1, 1]);
    // Each copy's Received names its own recipient only (RFC 5321 §7.2).
    expect(await rawSource(forCarol[0].id)).toContain("for <carol@inboxd.test>;");
    expect(await rawSource(forCarol[0].id)).not.toContain("for <bob");
  });
});

describe("recipient policy at RCPT", () => {
  const rcptReply = async (address: string) => {
    const session = await openSession(server.smtpPort);
    await startTransaction(session, "alice@sender.test", []);
    const reply = (await session.command(`RCPT TO:<${address}>`)).text;
    session.end();
    return reply;
  };

  /** The return path of a delivery of ours: the MAIL FROM of a message sent through the API to a remote recipient. */
  const ourReturnPath = async () => {
    const sent = await server.api.post(`/v1/inboxes/${bob.id}/messages/send`, { to: ["someone@elsewhere.test"], subject: "out", text: "x", html: "" }, apiKey);
    expect(sent.status).toBe(201);
    const delivery = (await queryRow<{ id: string }>(server.app, `SELECT id FROM deliveries WHERE message_id = '${sent.body.id}'`))!;
    return returnPathFor(server.app, delivery.id);
  };

  test.each([
    ["unknown user on the service domain", "nobody@inboxd.test", /^550 5\.1\.1 /],
    ["another domain: never a relay", "someone@elsewhere.test", /^550 5\.7\.1 Relaying denied/],
    ["a subdomain of the service domain", "bob@sub.inboxd.test", /^550 5\.7\.1 /],
    ["a case variant of an inbox address", "Bob@InboxD.Test", /^250 /],
    ["a +tag of an inbox address", "bob+newsletters@inboxd.test", /^250 /],
    ["a return path that names no delivery of ours", "bounces+dlv_0123abcd@mx.inboxd.test", /^550 5\.1\.1 /],
  ])("%s", async (_name, address, expected) => {
    expect(await rcptReply(address)).toMatch(expected);
  });

  test("a return path of one of our deliveries; without its tag, or with another delivery's, the same 550 as for no delivery", async () => {
    const returnPath = await ourReturnPath();
    expect(await rcptReply(returnPath)).toMatch(/^250 /);
    const [, deliveryId, tag] = /^bounces\+(dlv_[0-9a-f]+)-([0-9a-f]+)@/.exec(returnPath)!;
    const neighbour = `dlv_${(BigInt(`0x${deliveryId!.slice(4)}`) + 1n).toString(16).padStart(deliveryId!.length - 4, "0")}`;
    for (const forged of [`bounces+${deliveryId}@mx.inboxd.test`, `bounces+${neighbour}-${tag}@mx.inboxd.test`]) expect(await rcptReply(forged)).toMatch(/^550 5\.1\.1 No such user here/);
  });

  test("a message for a return path goes to the report handling, not into an inbox", async () => {
    const returnPath = await ourReturnPath();
    const before = (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM messages"))!.n;
    const sent = await sendMail(server.smtpPort, { from: "", to: [returnPath], raw: plainMessage("a bounce") });
    expect(sent.response).toMatch(/^250 /);
    expect((await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM messages"))!.n).toBe(before);
  });

  test("at most 100 recipients per transaction: the 101st gets 452", async () => {
    const session = await openSession(server.smtpPort);
    await startTransaction(session, "alice@sender.test", []);
    for (let i = 0; i < 100; i++) session.write(`RCPT TO:<bob+${i}@inboxd.test>\r\n`);
    for (let i = 0; i < 100; i++) expect((await session.reply()).code).toBe(250);
    expect((await session.command("RCPT TO:<bob+extra@inboxd.test>")).text).toMatch(/^452 4\.5\.3 /);
    session.end();
  });
});

describe("parsing round trips through the API", () => {
  test("multipart with attachments and an inline image: content byte for byte, names and types", async () => {
    const pdf = crypto.getRandomValues(new Uint8Array(40_000));
    const image = crypto.getRandomValues(new Uint8Array(3_000));
    const raw = await new MailComposer({
      from: "alice@sender.test",
      to: "bob@inboxd.test",
      subject: "with attachments",
      text: "See the attached report.",
      html: '<p>See the attached report.</p><img src="cid:logo@sender.test">',
      attachments: [
        { filename: "report.pdf", content: Buffer.from(pdf), contentType: "application/pdf" },
        { filename: "logo.png", content: Buffer.from(image), contentType: "image/png", cid: "logo@sender.test" },
      ],
    })
      .compile()
      .build();
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw });
    const message = await findBySubject(bob, "with attachments");
    expect(message.text).toBe("See the attached report.");
    expect(message.html).toContain('src="cid:logo@sender.test"');
    const byName = Object.fromEntries(message.attachments.map((attachment: any) => [attachment.name, attachment]));
    expect(Object.keys(byName).sort()).toEqual(["logo.png", "report.pdf"]);
    expect(byName["report.pdf"]).toMatchObject({ contentType: "application/pdf", inline: false });
    expect(byName["logo.png"]).toMatchObject({ contentType: "image/png", contentId: "logo@sender.test", inline: true });
    expect(Buffer.from(byName["report.pdf"].content, "base64").equals(Buffer.from(pdf))).toBe(true);
    expect(Buffer.from(byName["logo.png"].content, "base64").equals(Buffer.from(image))).toBe(true);
    // The stored source ends with the message exactly as sent.
    expect((await server.app.store.messages.rawSource(message.id))!.subarray(-raw.length).equals(raw)).toBe(true);
  });

  test("RFC 2047 encoded words and a non-UTF-8 body charset", async () => {
    const raw = Buffer.concat([
      Buffer.from("From: =?ISO-8859-1?Q?Andr=E9?= <andre@sender.test>\r\nTo: bob@inboxd.test\r\nSubject: =?ISO-8859-1?Q?Caf=E9_cr=E8me?=\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"),
      Buffer.from([0x76, 0x6f, 0x69, 0x6c, 0xe0, 0x0d, 0x0a]), // "voilà" in Latin-1
    ]);
    await sendMail(server.smtpPort, { from: "andre@sender.test", to: ["bob@inboxd.test"], raw });
    const message = await findBySubject(bob, "Café crème");
    expect(message.text).toBe("voilà\n");
  });

  test("HTML-only mail gets a text version; text-only mail has no html", async () => {
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: "From: alice@sender.test\r\nSubject: html only\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Hello <b>there</b></p>\r\n" });
    const htmlOnly = await findBySubject(bob, "html only");
    expect(htmlOnly.html).toContain("<b>there</b>");
    expect(htmlOnly.text).toContain("Hello there");
    const textOnly = await findBySubject(bob, "plain delivery");
    expect(textOnly.html).toBeUndefined();
  });

  test("an inbound reply joins the thread of the message sent from the API", async () => {
    const sent = await server.api.post(`/v1/inboxes/${bob.id}/messages/send`, { to: ["dave@remote.test"], subject: "Question", text: "Any news?", html: "<p>Any news?</p>" }, apiKey);
    expect(sent.status).toBe(201);
    const messageId = (await server.app.store.messages.find(sent.body.organizationId, bob.id, sent.body.id))!.messageIdHeader;
    const reply = `From: dave@remote.test\r\nTo: bob@inboxd.test\r\nSubject: Re: Question\r\nIn-Reply-To: ${messageId}\r\nReferences: ${messageId}\r\n\r\nYes.\r\n`;
    await sendMail(server.smtpPort, { from: "dave@remote.test", to: ["bob@inboxd.test"], raw: reply });
    const received = await findBySubject(bob, "Re: Question");
    expect(received.threadId).toBe(sent.body.threadId);
  });
});

describe("limits", () => {
  test("a SIZE= over the limit is refused at MAIL FROM with 552", async () => {
    const session = await openSession(server.smtpPort);
    await session.command("EHLO client.example");
    expect((await session.command(`MAIL FROM:<alice@sender.test> SIZE=${MAX_SIZE + 1}`)).text).toMatch(/^552 5\.3\.4 /);
    session.end();
  });

  test("a message found over the limit during DATA gets 552 and nothing is stored", async () => {
    const line = "x".repeat(998) + "\r\n";
    const raw = plainMessage("too big") + line.repeat(Math.ceil(MAX_SIZE / line.length) + 1);
    const error = await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw }).catch((e) => e);
    expect(error.responseCode).toBe(552);
    expect(error.response).toMatch(/^552 5\.3\.4 /);
    expect(await findBySubject(bob, "too big")).toBeUndefined();
  });

  test("a text line far over 1000 octets is taken whole, memory bounded by SIZE", async () => {
    const long = "y".repeat(100_000);
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: `From: alice@sender.test\r\nSubject: long line\r\n\r\n${long}\r\n` });
    expect((await findBySubject(bob, "long line")).text).toBe(`${long}\n`);
  });

  test("a message past the parser's limits (over 500 MIME parts), accepted before its analysis, is stored as it came, unanalysed", async () => {
    const parts = Array.from({ length: 501 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join("");
    const raw = `From: alice@sender.test\r\nSubject: too many parts\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`;
    const sent = await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw });
    expect(sent.response).toStartWith("250 ");
    const stored = (await messagesOf(bob)).filter((message) => message.subject === "" && message.from === "alice@sender.test");
    expect(stored).toHaveLength(1);
    const message = (await server.api.get(`/v1/inboxes/${bob.id}/messages/${stored[0].id}`, apiKey)).body;
    expect(message).toMatchObject({ attachments: [], authentication: { spf: "temperror", dkim: "temperror", dmarc: "temperror" } });
    expect(message.text).toBeUndefined();
    expect(await rawSource(message.id)).toContain("\r\nSubject: too many parts\r\n");
  });

  test.skipIf(onPostgres)(sqliteOnly("a message analysed at each try and never stored (its database refuses a value) is stored as it came once its tries are spent, not tried again for ever", "the refusal is a SQLite trigger"), async () => {
    const db = databaseOf(server.app);
    db.exec("CREATE TRIGGER refuse_message BEFORE INSERT ON messages WHEN NEW.subject = 'refused by its database' BEGIN SELECT RAISE(ABORT, 'simulated refusal'); END");
    try {
      const sent = await sendMail(server.smtpPort, { from: "carol@sender.test", to: ["bob@inboxd.test"], raw: "From: carol@sender.test\r\nSubject: refused by its database\r\n\r\nHi.\r\n" });
      expect(sent.response).toStartWith("250 ");
      const storedAsItCame = async () => (await messagesOf(bob)).find((message) => message.subject === "" && message.from === "carol@sender.test");
      // Its tries: at once, then after 1, 5, 30 and 120 minutes; the one after them stores it as it came.
      for (const minutes of [0, 1, 5, 30, 120, 120]) {
        server.clock.advance(minutes * 60_000);
        await server.app.queues.runDueNow("inbound");
      }
      const message = await eventually("the message stored as it came", storedAsItCame, (found) => found !== undefined);
      expect((await server.api.get(`/v1/inboxes/${bob.id}/messages/${message.id}`, apiKey)).body.authentication).toMatchObject({ spf: "temperror", dkim: "temperror", dmarc: "temperror" });
      expect(await rawSource(message.id)).toContain("\r\nSubject: refused by its database\r\n");
      expect(await queryRows(server.app, "SELECT id FROM accepted_inbound")).toEqual([]);
    } finally {
      db.exec("DROP TRIGGER refuse_message");
    }
  });

  test("a command line over 512 octets closes the connection, buffering nothing more", async () => {
    const session = await openSession(server.smtpPort);
    await session.command("EHLO client.example");
    session.write(`MAIL FROM:<${"a".repeat(600)}@sender.test>\r\n`);
    expect((await session.reply()).code).toBe(421);
    await session.closed();
  });
});

describe("SMTP smuggling (CVE-2023-51764 and the mox and smtpsmug lists)", () => {
  const smuggled = "MAIL FROM:<mallory@sender.test>\r\nRCPT TO:<carol@inboxd.test>\r\nDATA\r\nSubject: smuggled\r\n\r\nsmuggled\r\n.\r\n";
  // Each vector goes inside the data; a server that took any of them for the end of the data
  // would run the smuggled commands that follow as a second transaction.
  const vectors: [string, string][] = [
    ["<LF>.<LF>", "\n.\n"],
    ["<LF>.<CR><LF>", "\n.\r\n"],
    ["<CR>.<CR>", "\r.\r"],
    ["<CR>.<LF>", "\r.\n"],
    ["<LF>.<CR>", "\n.\r"],
    ["<CR><LF>.<LF>", "\r\n.\n"],
    ["<CR>.<CR><LF>", "\r.\r\n"],
    ["<CR><LF>.<CR>", "\r\n.\r"],
    ["<CR><LF><NUL>.<CR><LF>", "\r\n\x00.\r\n"],
    ["a bare CR in a line", "bare \r is bad\r\n"],
    ["a bare LF in a line", "bare \n is bad\r\n"],
  ];

  /** Sends `data` after DATA; expects one 554 for all of it, a session still in step, and no smuggled message. */
  async function assertSmugglingRefused(data: string) {
    const session = await openSession(server.smtpPort);
    await startTransaction(session, "alice@sender.test", ["bob@inboxd.test"]);
    expect((await session.command("DATA")).code).toBe(354);
    session.write(data);
    // RFC 5321 §4.2: reply text is printable ASCII.
    expect((await session.reply()).text).toMatch(/^554 5\.[56]\.\d [\x20-\x7e]+$/);
    // The next reply is the NOOP's: no smuggled command was answered in between.
    expect((await session.command("NOOP")).text).toMatch(/^250 /);
    expect((await session.command("QUIT")).code).toBe(221);
    expect(await findBySubject(carol, "smuggled")).toBeUndefined();
  }

  test.each(vectors)("%s inside the data is refused and never ends it", (_name, vector) => assertSmugglingRefused(`Subject: vector\r\n\r\nbody${vector}${smuggled}`));

  test.each([
    [".<LF>", ".\n"],
    [".<CR>", ".\r"],
    ["<LF>.<CR><LF>", "\n.\r\n"],
    ["<CR>.<CR><LF>", "\r.\r\n"],
  ])("%s at the very start of the data is refused", (_name, vector) => assertSmugglingRefused(`${vector}${smuggled}`));

  test.each([
    ["a command ending in a bare LF", "EHLO client.example\n"],
    ["a bare LF between pipelined commands", "EHLO client.example\r\nMAIL FROM:<alice@sender.test>\nRCPT TO:<bob@inboxd.test>\r\n"],
    ["a bare CR between commands", "EHLO client.example\rNOOP\r\n"],
  ])("%s gets 521 and the connection is closed", async (_name, input) => {
    const session = await openSession(server.smtpPort);
    session.write(input);
    expect((await session.reply()).text).toMatch(/^521 5\.5\.2 [\x20-\x7e]+$/);
    await session.closed();
  });

  test("a CRLF split across two packets is one line break, a CR followed by anything else is not", async () => {
    const session = await openSession(server.smtpPort);
    session.write("EHLO client.example\r");
    await Bun.sleep(50);
    session.write("\nNOOP\r");
    expect((await session.reply()).code).toBe(250);
    await Bun.sleep(50);
    session.write("X\r\n");
    expect((await session.reply()).text).toMatch(/^521 5\.5\.2 [\x20-\x7e]+$/);
    await session.closed();
  });

  test("pipelining after the real end of the data is still a second, valid message (RFC 2920)", async () => {
    const session = await openSession(server.smtpPort);
    await startTransaction(session, "alice@sender.test", ["bob@inboxd.test"]);
    expect((await session.command("DATA")).code).toBe(354);
    session.write("Subject: first of two\r\n\r\none\r\n.\r\nMAIL FROM:<alice@sender.test>\r\nRCPT TO:<bob@inboxd.test>\r\nDATA\r\n");
    expect((await session.reply()).code).toBe(250);
    expect((await session.reply()).code).toBe(250);
    expect((await session.reply()).code).toBe(250);
    expect((await session.reply()).code).toBe(354);
    expect((await session.command("Subject: second of two\r\n\r\ntwo\r\n.")).code).toBe(250);
    session.end();
    expect(await findBySubject(bob, "first of two")).toBeDefined();
    expect(await findBySubject(bob, "second of two")).toBeDefined();
  });
});

describe("Message-IDs", () => {
  test("one longer than a line (RFC 5322 §2.1.1) is not kept as the message's: the message is stored (on PostgreSQL its index refused it, and the message was tried again every 2 hours)", async () => {
    // Random, as an index entry is compressed: 3,000 x's are a few bytes in it.
    const longId = `<${randomBytes(1500).toString("hex")}@sender.test>`;
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: `Message-ID: ${longId}\r\nFrom: alice@sender.test\r\nSubject: long message id\r\n\r\nHi.\r\n` });
    const message = await findBySubject(bob, "long message id");
    expect(message).toBeDefined();
    // Sent again under the same id, it is a message of its own: no id to know it by.
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: `Message-ID: ${longId}\r\nFrom: alice@sender.test\r\nSubject: long message id again\r\n\r\nHi.\r\n` });
    expect(await findBySubject(bob, "long message id again")).toBeDefined();
    // Counted in bytes: 980 CJK characters, under a line's 998, are 2,940 of them (random, as before).
    const wide = Array.from(randomBytes(980), (byte, i) => String.fromCodePoint(0x4e00 + byte * 64 + (i % 64))).join("");
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: Buffer.from(`Message-ID: <${wide}@sender.test>\r\nFrom: alice@sender.test\r\nSubject: wide message id\r\n\r\nHi.\r\n`) });
    expect(await findBySubject(bob, "wide message id")).toBeDefined();
  });
});

describe("authentication results", () => {
  let keys: Awaited<ReturnType<typeof generateDkimKeys>>;
  beforeAll(async () => {
    keys = await generateDkimKeys(new Date());
    dns.set("auth.test", "TXT", ["v=spf1 ip4:127.0.0.1 -all"]);
    dns.set("_dmarc.auth.test", "TXT", ["v=DMARC1; p=reject"]);
    for (const key of keys) dns.set(`${key.selector}._domainkey.auth.test`, "TXT", [dkimTxtValue(key)]);
    dns.set("strict.test", "TXT", ["v=spf1 ip4:192.0.2.1 -all"]);
    dns.set("_dmarc.strict.test", "TXT", ["v=DMARC1; p=reject"]);
  });

  test("SPF, DKIM (RSA and Ed25519) and DMARC pass for a signed message from an authorised address", async () => {
    const raw = await signMessage(Buffer.from("From: alice@auth.test\r\nTo: bob@inboxd.test\r\nSubject: signed\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\n\r\nSigned body.\r\n"), { domain: "auth.test", keys });
    await sendMail(server.smtpPort, { from: "alice@auth.test", to: ["bob@inboxd.test"], raw });
    const message = await findBySubject(bob, "signed");
    expect(message.authentication).toEqual({ spf: "pass", dkim: "pass", dmarc: "pass", arc: "none" });
    expect(Object.keys(message.authentication)).toEqual(["spf", "dkim", "dmarc", "arc"]);
    const results = (await rawSource(message.id)).split("\r\nReceived:")[0];
    expect(results).toStartWith("Return-Path: <alice@auth.test>\r\nAuthentication-Results: mx.inboxd.test;");
    expect(results.match(/dkim=pass/g)).toHaveLength(2);
    expect(results).toMatch(/spf=pass[^;]*smtp\.mailfrom=alice@auth\.test/);
    expect(results).toContain("dmarc=pass");
  });

  test("a forged sender fails SPF and DMARC, and is stored since enforcement is off by default", async () => {
    await sendMail(server.smtpPort, { from: "ceo@strict.test", to: ["bob@inboxd.test"], raw: "From: ceo@strict.test\r\nTo: bob@inboxd.test\r\nSubject: wire the money\r\n\r\nNow.\r\n" });
    const message = await findBySubject(bob, "wire the money");
    expect(message.authentication).toMatchObject({ spf: "fail", dkim: "none", dmarc: "fail" });
  });

  // RFC 7489 §6.6.1: each author domain judged, the strictest policy applied. mailauth judged none
  // for several From mailboxes or fields, and the parser shows an address decoded that mailauth
  // reads raw: each was stored dmarc=none, shown as from strict.test (p=reject).
  test.each([
    ["a second mailbox in From", "From: ceo@strict.test, a@sender.test", "ceo@strict.test"],
    ["a second From field", "From: a@sender.test\r\nFrom: ceo@strict.test", undefined],
    ["an address in encoded words", "From: CEO <=?utf-8?B?Y2VvQHN0cmljdC50ZXN0?=>", "ceo@strict.test"],
    ["a domain in encoded words", "From: ceo@=?utf-8?B?c3RyaWN0LnRlc3Q=?=", "ceo@strict.test"],
    ["an xn-- label that is no A-label", "From: CEO <ceo@xn--strict-.test>", "ceo@strict.test"],
  ])("%s: every author domain is judged, and the strictest result stands", async (shape, from, shownFrom) => {
    const subject = `spoof: ${shape}`;
    await sendMail(server.smtpPort, { from: "a@sender.test", to: ["bob@inboxd.test"], raw: `${from}\r\nTo: bob@inboxd.test\r\nSubject: ${subject}\r\n\r\nPay now.\r\n` });
    const message = await findBySubject(bob, subject);
    if (shownFrom) expect(message.from).toBe(shownFrom);
    expect(message.authentication.dmarc).toBe("fail");
    expect((await rawSource(message.id)).split("\r\nReceived:")[0]).toMatch(/dmarc=fail[^;]*header\.from=strict\.test/);
  });

  test("a From of more author domains than are judged (10) is dmarc=permerror, judged by no look-up, and refused under enforcement", async () => {
    const from = `From: ${Array.from({ length: 11 }, (_, i) => `a@d${i}.test`).join(", ")}, ceo@strict.test`;
    await sendMail(server.smtpPort, { from: "a@sender.test", to: ["bob@inboxd.test"], raw: `${from}\r\nTo: bob@inboxd.test\r\nSubject: many authors\r\n\r\nPay now.\r\n` });
    const message = await findBySubject(bob, "many authors");
    expect(message.authentication.dmarc).toBe("permerror");
    expect((await rawSource(message.id)).split("\r\nReceived:")[0]).toContain("dmarc=permerror (more than 10 author domains)");
  });

  test("RFC 8301 §3.1: an rsa-sha1 signature does not pass, nor make DMARC pass", async () => {
    const [rsa] = keys;
    const unsigned = "From: alice@auth.test\r\nTo: bob@inboxd.test\r\nSubject: sha1 signed\r\n\r\nOld signer.\r\n";
    // mailauth reads its signatures from signatureData, whatever its typings say.
    const signing = { signatureData: [{ signingDomain: "auth.test", selector: rsa.selector, privateKey: rsa.privateKeyPem, algorithm: "rsa-sha1" }] };
    const signed = await dkimSign(unsigned, signing as unknown as Parameters<typeof dkimSign>[1]);
    expect(signed.signatures).toContain("a=rsa-sha1");
    // From an address auth.test's SPF does not authorise, so that only the signature could pass.
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: signed.signatures + unsigned });
    const message = await findBySubject(bob, "sha1 signed");
    expect(message.authentication.dkim).toBe("policy");
    expect(message.authentication.dmarc).toBe("fail");
  });

  test("RFC 6376 §8.2: a signature whose l= leaves part of the body unsigned counts as none (dkim=policy), so text appended after it does not pass DMARC; one over the whole body passes", async () => {
    const [rsa] = keys;
    const signedPart = "Signed part.\r\n";
    const sign = async (subject: string, maxBodyLength: number) => {
      const head = `From: alice@auth.test\r\nTo: bob@inboxd.test\r\nSubject: ${subject}\r\n\r\n`;
      const signing = { signatureData: [{ signingDomain: "auth.test", selector: rsa.selector, privateKey: rsa.privateKeyPem, maxBodyLength }] };
      return (await dkimSign(head + signedPart, signing as unknown as Parameters<typeof dkimSign>[1])).signatures + head + signedPart;
    };
    // From an address auth.test's SPF does not authorise, so that only the signature could pass.
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: `${await sign("partly signed", signedPart.length)}Pay the attacker instead.\r\n` });
    const appended = await findBySubject(bob, "partly signed");
    expect(appended.authentication).toMatchObject({ dkim: "policy", dmarc: "fail" });
    const results = (await rawSource(appended.id)).split("\r\nReceived:")[0];
    expect(results).toContain("dkim=policy (signed part of the body only: 27 bytes unsigned) header.d=auth.test");
    expect(results).not.toContain("dkim=none");
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: await sign("wholly signed", signedPart.length) });
    expect((await findBySubject(bob, "wholly signed")).authentication).toMatchObject({ dkim: "pass", dmarc: "pass" });

    // A second signer's partial signature over the same body hash as the author's whole one (simple
    // against relaxed canonicalization of a body ending in a blank line) leaves the author's standing.
    const head = "From: alice@auth.test\r\nTo: bob@inboxd.test\r\nSubject: signed twice\r\n\r\n";
    const body = "Hello.\r\n \r\n";
    const author = await dkimSign(head + body, { signatureData: [{ signingDomain: "auth.test", selector: rsa.selector, privateKey: rsa.privateKeyPem }] } as unknown as Parameters<typeof dkimSign>[1]);
    const forwarder = await dkimSign(author.signatures + head + body, {
      canonicalization: "relaxed/simple",
      signatureData: [{ signingDomain: "auth.test", selector: rsa.selector, privateKey: rsa.privateKeyPem, maxBodyLength: 8 }],
    } as unknown as Parameters<typeof dkimSign>[1]);
    await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: forwarder.signatures + author.signatures + head + body });
    expect((await findBySubject(bob, "signed twice")).authentication).toMatchObject({ dkim: "pass", dmarc: "pass" });

    // Beside a whole signature the appended text broke, a partial one leaves that one's word, as if it were not there.
    const broken = async (subject: string, withPartial: boolean) => {
      const headed = head.replace("signed twice", subject);
      const whole = await dkimSign(headed + body, { signatureData: [{ signingDomain: "auth.test", selector: rsa.selector, privateKey: rsa.privateKeyPem }] } as unknown as Parameters<typeof dkimSign>[1]);
      const partial = withPartial
        ? (await dkimSign(whole.signatures + headed + body, { signatureData: [{ signingDomain: "auth.test", selector: rsa.selector, privateKey: rsa.privateKeyPem, maxBodyLength: body.length }] } as unknown as Parameters<typeof dkimSign>[1])).signatures
        : "";
      await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw: `${partial}${whole.signatures}${headed}${body}Appended.\r\n` });
      return (await findBySubject(bob, subject)).authentication.dkim;
    };
    const alone = await broken("whole signature broken", false);
    expect(alone).not.toBe("pass");
    expect(await broken("whole signature broken beside a partial one", true)).toBe(alone);
  });

  test("an Authentication-Results field claiming to be ours is removed; ours is the only one", async () => {
    const forged = "Authentication-Results: MX.INBOXD.TEST; dkim=pass; spf=pass; dmarc=pass\r\n";
    const other = "Authentication-Results: mx.elsewhere.test; spf=pass\r\n";
    await sendMail(server.smtpPort, { from: "ceo@strict.test", to: ["bob@inboxd.test"], raw: `${forged}${other}From: ceo@strict.test\r\nSubject: forged results\r\n\r\nTrust me.\r\n` });
    const raw = await rawSource((await findBySubject(bob, "forged results")).id);
    expect(raw.match(/^Authentication-Results: mx\.inboxd\.test;/gim)).toHaveLength(1);
    expect(raw).toContain(other);
    expect(raw).toMatch(/^Authentication-Results: mx\.inboxd\.test;[^]*spf=fail/m);
  });

  test("RFC 5321 §4.4: the final delivery's Return-Path names the envelope sender (<> for a bounce) on top; one that came with the message is removed", async () => {
    const forged = "Return-Path: <forged@bank.example>\r\n";
    for (const mailFrom of ["real-sender@sender.test", ""]) {
      const subject = `return path of <${mailFrom}>`;
      await sendMail(server.smtpPort, { from: mailFrom, to: ["bob@inboxd.test"], raw: `${forged}From: someone@sender.test\r\nSubject: ${subject}\r\n\r\nHi.\r\n` });
      const raw = await rawSource((await eventually(subject, () => findBySubject(bob, subject), (found) => found !== undefined)).id);
      expect(raw).toStartWith(`Return-Path: <${mailFrom}>\r\nAuthentication-Results: mx.inboxd.test;`);
      expect(raw.match(/^Return-Path:/gim)).toHaveLength(1);
      expect(raw).not.toContain("forged@bank.example");
    }
  });

  test("an ARC set added by a forwarder is verified", async () => {
    const [rsa] = keys;
    dns.set(`${rsa.selector}._domainkey.forwarder.test`, "TXT", [dkimTxtValue(rsa)]);
    const raw = Buffer.from("From: alice@auth.test\r\nTo: bob@inboxd.test\r\nSubject: forwarded\r\n\r\nPassed along.\r\n");
    const seal = await sealMessage(raw, { signingDomain: "forwarder.test", selector: rsa.selector, privateKey: rsa.privateKeyPem, cv: "none", authResults: "forwarder.test; spf=pass smtp.mailfrom=alice@auth.test; dmarc=pass header.from=auth.test" });
    await sendMail(server.smtpPort, { from: "list@forwarder.test", to: ["bob@inboxd.test"], raw: Buffer.concat([seal, raw]) });
    const message = await findBySubject(bob, "forwarded");
    expect(message.authentication.arc).toBe("pass");
    // What the sealer claimed of its own checks is not repeated in our field as if ours.
    const ours = (await rawSource(message.id)).split("\r\nReceived:")[0]!;
    expect(ours).toMatch(/;\r\n arc=pass;\r\n /);
    expect(ours).not.toContain("fromdomain=auth.test");
    expect(ours).toMatch(/dmarc=fail[^;]*header\.from=auth\.test/);
  });

  test("at most 10 DKIM signatures of a message are checked", async () => {
    const signature = "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=auth.test; s=missing; h=from; bh=AAAA; b=AAAA\r\n";
    await sendMail(server.smtpPort, { from: "alice@auth.test", to: ["bob@inboxd.test"], raw: `${signature.repeat(12)}From: alice@auth.test\r\nSubject: many signatures\r\n\r\nx\r\n` });
    const results = (await rawSource((await findBySubject(bob, "many signatures")).id)).split("\r\nReceived:")[0];
    expect(results.match(/dkim=/g)).toHaveLength(10);
  });
});

describe("a real MTA client by hand", () => {
  const swaks = Bun.which("swaks");
  test.skipIf(!swaks)(`swaks delivers over STARTTLS${swaks ? "" : " (skipped: swaks is not installed; apt-get install swaks)"}`, async () => {
    const run = Bun.spawn([swaks!, "--server", `127.0.0.1:${server.smtpPort}`, "--tls", "--ehlo", "client.example", "--from", "alice@sender.test", "--to", "bob@inboxd.test", "--header", "Subject: via swaks", "--body", "Sent by swaks."], { stdout: "pipe", stderr: "pipe" });
    const output = await new Response(run.stdout).text();
    expect(await run.exited).toBe(0);
    expect(output).toContain("=== TLS started with cipher");
    expect(output).toMatch(/<~ +250 2\.6\.0 Message accepted/);
    const message = await findBySubject(bob, "via swaks");
    expect(message.text).toContain("Sent by swaks.");
  });
});
