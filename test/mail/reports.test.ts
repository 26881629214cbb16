import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { parseMessage } from "../../src/mail/parse";
import { parseReport } from "../../src/mail/reports";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
const crlf = (text: string) => Buffer.from(text.replace(/\r?\n/g, "\r\n"));

describe("parseReport: delivery status notifications (RFC 3464)", () => {
  test("Postfix bounce with two failed recipients and the returned message", async () => {
    expect(await parseReport(fixture("postfix-dsn.eml"))).toEqual({
      kind: "dsn",
      recipients: [
        {
          recipient: "nobody@example.net",
          action: "failed",
          status: "5.1.1",
          diagnostic: "550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown in local recipient table",
        },
        {
          recipient: "full@example.net",
          action: "failed",
          status: "5.2.2",
          diagnostic: "552 5.2.2 <full@example.net>: Mailbox full",
        },
      ],
      originalMessageId: "<7f3c2a9e1b5d4c68a0e2f4b6d8c0a1e3@inboxd.example>",
    });
  });

  test("media types in any case (RFC 2045 §5.1)", async () => {
    const shouting = fixture("postfix-dsn.eml")
      .toString()
      .replace("multipart/report", "Multipart/REPORT")
      .replace("message/delivery-status", "Message/Delivery-Status")
      .replace("Content-Type: message/rfc822", "Content-Type: MESSAGE/RFC822");
    expect(await parseReport(Buffer.from(shouting))).toMatchObject({
      kind: "dsn",
      originalMessageId: "<7f3c2a9e1b5d4c68a0e2f4b6d8c0a1e3@inboxd.example>",
    });
  });

  test("Gmail bounce: multi-line diagnostic unfolded", async () => {
    const report = await parseReport(fixture("gmail-dsn.eml"));
    expect(report).toMatchObject({
      kind: "dsn",
      recipients: [{ recipient: "nobody.here@gmail.com", action: "failed", status: "5.1.1" }],
      originalMessageId: "<a1b2c3d4e5f60718293a4b5c6d7e8f90@inboxd.example>",
    });
    if (report?.kind !== "dsn") throw new Error("expected a DSN");
    expect(report.recipients[0].diagnostic).toStartWith("550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1 double-checking");
    expect(report.recipients[0].diagnostic).toEndWith("- gsmtp");
  });

  test("Gmail bounce without the returned message: X-Original-Message-ID", async () => {
    const gmail = fixture("gmail-dsn.eml").toString();
    const withoutOriginal = gmail.replace(/--000000000000f3a1b2061757d0c1\r\nContent-Type: message\/rfc822[\s\S]*(?=--000000000000f3a1b2061757d0c1--)/, "");
    expect(withoutOriginal).not.toContain("message/rfc822");
    expect(await parseReport(Buffer.from(withoutOriginal))).toMatchObject({
      kind: "dsn",
      originalMessageId: "<a1b2c3d4e5f60718293a4b5c6d7e8f90@inboxd.example>",
    });
  });

  test("Exchange Online bounce: text/rfc822-headers, extended status code", async () => {
    expect(await parseReport(fixture("exchange-dsn.eml"))).toEqual({
      kind: "dsn",
      recipients: [
        {
          recipient: "Ghost@contoso.com",
          action: "failed",
          status: "5.1.10",
          diagnostic: "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient Ghost@contoso.com not found by SMTP address lookup",
        },
      ],
      originalMessageId: "<c4d5e6f7a8b94c0d1e2f3a4b5c6d7e8f@inboxd.example>",
    });
  });

  test("Postfix delay warning is a DSN with action delayed", async () => {
    const delayed = crlf(`From: MAILER-DAEMON@mail.example.net (Mail Delivery System)
To: alice@inboxd.example
Subject: Delayed Mail (still being retried)
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

This is the mail system at host mail.example.net. ...

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.net
Arrival-Date: Wed,  1 May 2024 10:00:03 +0000 (UTC)

Final-Recipient: rfc822; slow@example.org
Action: delayed (will retry)
Status: 4.4.1 (persistent transient failure)
Diagnostic-Code: X-Postfix; connect to mx.example.org[192.0.2.9]:25: Connection timed out
Will-Retry-Until: Sun,  5 May 2024 10:00:03 +0000 (UTC)

--B
Content-Type: text/rfc822-headers

From: alice@inboxd.example
Message-ID: <slow-1@inboxd.example>

--B--
`);
    expect(await parseReport(delayed)).toEqual({
      kind: "dsn",
      recipients: [
        {
          recipient: "slow@example.org",
          action: "delayed",
          status: "4.4.1",
          diagnostic: "connect to mx.example.org[192.0.2.9]:25: Connection timed out",
        },
      ],
      originalMessageId: "<slow-1@inboxd.example>",
    });
  });
});

describe("parseReport: abuse feedback reports (RFC 5965)", () => {
  test("Yahoo complaint, original attached inline", async () => {
    expect(await parseReport(fixture("yahoo-arf.eml"))).toEqual({
      kind: "arf",
      feedbackType: "abuse",
      originalMessageId: "<0e9d8c7b6a5948372615f4e3d2c1b0a9@inboxd.example>",
      originalRecipient: "carol.reader@yahoo.com",
    });
  });

  test("Microsoft JMRP complaint", async () => {
    expect(await parseReport(fixture("microsoft-arf.eml"))).toEqual({
      kind: "arf",
      feedbackType: "abuse",
      originalMessageId: "<5a4b3c2d1e0f49a8b7c6d5e4f3a2b1c0@inboxd.example>",
      originalRecipient: "dave.outlook@outlook.com",
    });
  });

  test("a redacted recipient is reported as written", async () => {
    const redacted = fixture("yahoo-arf.eml").toString().replace("Original-Rcpt-To: <carol.reader@yahoo.com>", "Original-Rcpt-To: <redacted@yahoo.com>");
    expect(await parseReport(Buffer.from(redacted))).toMatchObject({ originalRecipient: "redacted@yahoo.com" });
  });
});

describe("parseReport: everything else is null", () => {
  test("an ordinary message", async () => {
    expect(await parseReport(crlf("From: a@example.com\nSubject: hi\n\nhello\n"))).toBeNull();
  });

  test("a bounce forwarded as an attachment (multipart/report is not top-level)", async () => {
    const bounce = fixture("postfix-dsn.eml");
    const forwarded = Buffer.concat([
      crlf("From: a@example.com\nContent-Type: multipart/mixed; boundary=F\n\n--F\nContent-Type: text/plain\n\nFYI\n--F\nContent-Type: message/rfc822\n\n"),
      bounce,
      crlf("\n--F--\n"),
    ]);
    expect(await parseReport(forwarded)).toBeNull();
  });

  test("a read receipt (RFC 8098 disposition notification)", async () => {
    const receipt = crlf(`From: b@example.com
Content-Type: multipart/report; report-type=disposition-notification; boundary=R

--R
Content-Type: text/plain

Your message was displayed.
--R
Content-Type: message/disposition-notification

Reporting-UA: mail.example.com; Example Mail
Final-Recipient: rfc822; b@example.com
Original-Message-ID: <m@inboxd.example>
Disposition: manual-action/MDN-sent-manually; displayed
--R--
`);
    expect(await parseReport(receipt)).toBeNull();
  });

  test("a delivery-status part without any recipient", async () => {
    const empty = crlf(`From: MAILER-DAEMON@mail.example.net
Content-Type: multipart/report; report-type=delivery-status; boundary=E

--E
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.net

--E--
`);
    expect(await parseReport(empty)).toBeNull();
  });
});

test("parseMessage shows a DSN's delivery-status part as text (mailparser's default)", async () => {
  const parsed = await parseMessage(fixture("postfix-dsn.eml"));
  expect(parsed.text).toContain("Final-Recipient: rfc822; nobody@example.net");
  expect(parsed.attachments.map((attachment) => attachment.contentType)).toEqual(["message/rfc822"]);
});
