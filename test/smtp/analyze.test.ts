// The analysis gives the parser only the header fields the stored content comes from: what it
// stores must be what a parse of the whole message gives.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { DNSResolver } from "mailauth";
import { parseMessage } from "../../src/mail/parse";
import type { ReceivedContent } from "../../src/messages/receive";
import { analyzeMessage } from "../../src/smtp/analyze";
import { dnsBudgetOf } from "../../src/smtp/dns-budget";

const identity = { clientIp: "127.0.0.1", helo: "client.example", mailFrom: "alice@sender.test" };
const noRecords = (async () => {
  throw Object.assign(new Error("no such record"), { code: "ENOTFOUND" });
}) as unknown as DNSResolver;
const settings = { authservId: "mx.inboxd.test", resolver: noRecords, dnsBudget: dnsBudgetOf(30_000) };

/** Fields a receiver sees besides those the stored content comes from. */
const otherFields = [
  "Received: from client.example (client.example [127.0.0.1])\r\n\tby mx.sender.test; Tue, 24 Nov 2026 10:00:00 +0000",
  "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=sender.test; s=s1;\r\n\th=from:to:subject; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=AAAA",
  "ARC-Seal: i=1; a=rsa-sha256; cv=none; d=list.test; s=arc; b=BBBB",
  "List-Id: Garden volunteers <garden.list.test>",
  "X-Mailer: Example Mail 1.0",
  "Reply-To: replies@sender.test",
  "Authentication-Results: mx.inboxd.test; spf=pass",
];

function message(fields: string[], body: string): Buffer {
  return Buffer.from(`${fields.join("\r\n")}\r\n\r\n${body}`, "latin1");
}

function stored(parsed: ReceivedContent) {
  const { messageId, inReplyTo, references, from, fromName, to, cc, replyTo, subject, text, html, attachments } = parsed;
  return { messageId, inReplyTo, references, from, fromName, to, cc, replyTo, subject, text, html, attachments };
}

async function expectStoredAsWhole(raw: Buffer) {
  const analysis = await analyzeMessage(raw, identity, settings);
  expect(analysis.parsed).toEqual(stored(await parseMessage(raw)));
  return analysis;
}

describe("the fields the parser is given", () => {
  test("a multipart message with encoded words, threading fields, a group and an inline image stores what the whole message gives", async () => {
    const boundary = "b1";
    const raw = message(
      [
        ...otherFields,
        "From: =?UTF-8?Q?Caf=C3=A9_News?= <news@sender.test>",
        "To: Bob <bob@inboxd.test>, team: carol@inboxd.test, dave@inboxd.test;",
        "Cc: erin@inboxd.test",
        "Subject: =?UTF-8?Q?R=C3=A9sum=C3=A9_workshop?=\r\n =?UTF-8?Q?_on_Monday?=",
        "Date: Tue, 24 Nov 2026 10:00:00 +0000",
        "Message-ID: <update-2@sender.test>",
        "In-Reply-To: <update-1@sender.test>",
        "References: <update-0@sender.test>\r\n <update-1@sender.test>",
        "MIME-Version: 1.0",
        `Content-Type: multipart/related; boundary="${boundary}"`,
      ],
      [
        `--${boundary}`,
        "Content-Type: text/html; charset=iso-8859-1",
        "Content-Transfer-Encoding: quoted-printable",
        "",
        "<p>Caf=E9 <img src=3D\"cid:logo@sender.test\"></p>",
        `--${boundary}`,
        "Content-Type: image/png; name=logo.png",
        "Content-Disposition: inline; filename=logo.png",
        "Content-ID: <logo@sender.test>",
        "Content-Transfer-Encoding: base64",
        "",
        randomBytes(300).toString("base64"),
        `--${boundary}--`,
        "",
      ].join("\r\n"),
    );
    const { parsed } = await expectStoredAsWhole(raw);
    expect(parsed).toMatchObject({ subject: "Résumé workshop on Monday", fromName: "Café News", references: ["<update-0@sender.test>", "<update-1@sender.test>"], inReplyTo: "<update-1@sender.test>" });
    expect(parsed.to).toEqual(["bob@inboxd.test", "carol@inboxd.test", "dave@inboxd.test"]);
    expect(parsed.attachments).toMatchObject([{ contentId: "logo@sender.test", inline: true, contentType: "image/png" }]);
  });

  test("a message that is one attachment keeps its name, its Content-ID and its bytes; one over the parser's slice size streams in pieces", async () => {
    for (const bytes of [2_000, 300_000]) {
      const content = randomBytes(bytes);
      const raw = message(
        [
          ...otherFields,
          "From: scanner@sender.test",
          "To: bob@inboxd.test",
          "Subject: scan",
          "MIME-Version: 1.0",
          "Content-Type: application/pdf; name=scan.pdf",
          "Content-Disposition: attachment; filename=scan.pdf",
          "Content-ID: <scan@sender.test>",
          "Content-Transfer-Encoding: base64",
        ],
        content.toString("base64").replace(/.{76}/g, "$&\r\n") + "\r\n",
      );
      const { parsed } = await expectStoredAsWhole(raw);
      expect(parsed.attachments).toHaveLength(1);
      expect(parsed.attachments[0]).toMatchObject({ filename: "scan.pdf", contentType: "application/pdf", contentId: "scan@sender.test", inline: false });
      expect(Buffer.compare(parsed.attachments[0]!.content, content)).toBe(0);
    }
  });

  test("the authentication checks still see every field, and the stored source keeps them", async () => {
    const raw = message([...otherFields.filter((field) => !field.startsWith("Authentication-Results")), "From: alice@sender.test", "To: bob@inboxd.test", "Subject: hi"], "Hello.\r\n");
    const analysis = await expectStoredAsWhole(raw);
    // The DKIM-Signature was read (and fails: its key cannot be found), not left out.
    expect(analysis.authentication.dkim).not.toBe("none");
    expect(analysis.raw.toString("latin1")).toContain("DKIM-Signature:");
    expect(analysis.raw.toString("latin1")).toContain("List-Id:");
  });

  test("raw 8-bit text that is not UTF-8 is read in the declared charset, else windows-1252; UTF-8 stays as it is", async () => {
    // `message` writes each character as one byte: "\xe9" is the byte 0xE9, as a Latin-1 mail program writes é.
    const latin1 = await analyzeMessage(message(["From: Ren\xe9 Dupr\xe9 <rene@sender.test>", "To: bob@inboxd.test", "Subject: Caf\xe9 \x80 5", "Reply-To: rene@sender.test"], "Bonjour.\r\n"), identity, settings);
    expect(latin1.parsed.subject).toBe("Café € 5");
    expect(latin1.parsed.fromName).toBe("René Dupré");
    const declared = ["From: adam@sender.test", "To: bob@inboxd.test", "Subject: Zaj\xea\xe6 \xb1", "MIME-Version: 1.0", 'Content-Type: text/plain; charset="iso-8859-2"'];
    expect((await analyzeMessage(message(declared, "Tekst.\r\n"), identity, settings)).parsed.subject).toBe("Zajęć ą");
    const utf8 = Buffer.from("From: René <rene@sender.test>\r\nTo: bob@inboxd.test\r\nSubject: Café\r\n\r\nBonjour.\r\n", "utf8");
    const analysis = await expectStoredAsWhole(utf8);
    expect(analysis.parsed.subject).toBe("Café");
    expect(analysis.parsed.fromName).toBe("René");
  });
});
