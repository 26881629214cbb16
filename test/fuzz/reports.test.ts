// Fuzz target: DSN (RFC 3464) and ARF (RFC 5965) report parsing (src/mail/reports.ts). Reports
// arrive from any server on the internet and drive bounce and complaint handling; parseReport
// resolves with a report or null for any bytes, or rejects with MessageLimitError.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parseAddress } from "../../src/mail/address";
import { MessageLimitError } from "../../src/mail/limits";
import { parseReport, type DeliveryReport } from "../../src/mail/reports";
import { fuzz, settle, testTimeout, withinTime } from "./budget";
import { mutated } from "./mime";

const FIXTURES = ["exchange-dsn.eml", "gmail-dsn.eml", "microsoft-arf.eml", "postfix-dsn.eml", "yahoo-arf.eml"].map((name) => readFileSync(join(import.meta.dir, "../mail/fixtures", name)));

function expectWellFormed(report: DeliveryReport | null) {
  if (report === null) return;
  if (report.kind === "dsn") {
    expect(report.recipients.length).toBeGreaterThan(0);
    for (const recipient of report.recipients) {
      expect(recipient.action).toMatch(/^[a-z]+$/);
      expect(recipient.status).toMatch(/^[245]\.\d{1,3}\.\d{1,3}$/);
      expect(typeof recipient.recipient).toBe("string");
    }
  } else {
    expect(report.feedbackType).toMatch(/^[a-z0-9-]+$/);
  }
}

async function parsesWithinBounds(raw: Buffer) {
  const outcome = await withinTime(`parseReport of ${raw.length} bytes`, () => settle(parseReport(raw)));
  if (outcome.ok) expectWellFormed(outcome.value);
  else expect(outcome.error).toBeInstanceOf(MessageLimitError);
}

// Lines of a fixture with some dropped, repeated, swapped or given a random value.
const lineMutated = fc.tuple(fc.constantFrom(...FIXTURES), fc.array(fc.tuple(fc.nat(), fc.constantFrom("drop", "repeat", "swap", "value", "fold")), { minLength: 1, maxLength: 6 }), fc.string({ maxLength: 60 })).map(([fixture, edits, text]) => {
  const lines = fixture.toString("latin1").split("\n");
  for (const [at, op] of edits) {
    const i = at % lines.length;
    if (op === "drop") lines.splice(i, 1);
    else if (op === "repeat") lines.splice(i, 0, lines[i]!);
    else if (op === "swap") [lines[i], lines[(i + 1) % lines.length]] = [lines[(i + 1) % lines.length]!, lines[i]!];
    else if (op === "value") lines[i] = lines[i]!.replace(/:.*/, `: ${text}`);
    else lines[i] = `${lines[i]}\n ${text}`;
  }
  return Buffer.from(lines.join("\n"), "latin1");
});

const ACTIONS = ["failed", "delayed", "delivered", "relayed", "expanded"];
const recipientGroup = fc.record({
  address: fc.emailAddress().filter((a) => parseAddress(a) !== null),
  action: fc.constantFrom(...ACTIONS),
  status: fc.tuple(fc.constantFrom(2, 4, 5), fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 999 })).map((parts) => parts.join(".")),
  diagnostic: fc.option(fc.string({ unit: fc.constantFrom(..."abc 0123456789.-"), minLength: 1, maxLength: 60 }).filter((d) => d.trim() !== ""), { nil: undefined }),
});

/** A DSN as an MTA writes one, for the compose-then-parse round trip. */
function dsn(recipients: { address: string; action: string; status: string; diagnostic?: string }[], messageId: string): Buffer {
  const groups = recipients.map((r) => [`Final-Recipient: rfc822; ${r.address}`, `Action: ${r.action}`, `Status: ${r.status}`, ...(r.diagnostic ? [`Diagnostic-Code: smtp; ${r.diagnostic}`] : [])].join("\r\n"));
  return Buffer.from(
    [
      "From: MAILER-DAEMON@mx.example.net",
      "To: sender@inboxd.example",
      "Subject: Undelivered Mail",
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
      "",
      "--b",
      "Content-Type: text/plain",
      "",
      "Delivery failed.",
      "--b",
      "Content-Type: message/delivery-status",
      "",
      "Reporting-MTA: dns; mx.example.net",
      "",
      groups.join("\r\n\r\n"),
      "",
      "--b",
      "Content-Type: text/rfc822-headers",
      "",
      `Message-ID: ${messageId}`,
      "From: sender@inboxd.example",
      "",
      "--b--",
      "",
    ].join("\r\n"),
  );
}

describe("fuzz: parseReport", () => {
  test(
    "mutated real reports",
    async () => {
      await fuzz("reports/mutated-fixtures", fc.asyncProperty(fc.oneof(mutated(fc.constantFrom(...FIXTURES)), lineMutated), parsesWithinBounds));
    },
    testTimeout(),
  );

  test(
    "random delivery-status and feedback-report bodies",
    async () => {
      const field = fc.tuple(fc.constantFrom("Final-Recipient", "Original-Recipient", "Action", "Status", "Diagnostic-Code", "Feedback-Type", "Original-Rcpt-To", "X-Original-Message-ID", "x"), fc.string({ maxLength: 40 })).map(([name, value]) => `${name}: ${value}`);
      const block = fc.tuple(fc.array(fc.oneof(field, fc.string({ maxLength: 30 })), { maxLength: 8 }), fc.constantFrom("\r\n", "\n")).map(([fields, eol]) => fields.join(eol));
      const body = fc.array(block, { maxLength: 5 }).map((blocks) => blocks.join("\r\n\r\n"));
      const report = fc.tuple(fc.constantFrom("message/delivery-status", "message/global-delivery-status", "message/feedback-report"), body, fc.constantFrom("message/rfc822", "text/rfc822-headers", "message/global-headers"), fc.string({ maxLength: 200 })).map(([type, status, originalType, original]) =>
        Buffer.from(`Content-Type: multipart/report; boundary=b\r\n\r\n--b\r\nContent-Type: ${type}\r\n\r\n${status}\r\n--b\r\nContent-Type: ${originalType}\r\n\r\n${original}\r\n--b--\r\n`),
      );
      await fuzz("reports/random-fields", fc.asyncProperty(report, parsesWithinBounds));
    },
    testTimeout(),
  );

  test(
    "a DSN written by an MTA reads back recipient for recipient",
    async () => {
      const messageId = fc.tuple(fc.stringMatching(/^[a-z0-9.]{1,20}$/), fc.domain()).map(([left, right]) => `<${left}@${right}>`);
      await fuzz(
        "reports/dsn-round-trip",
        fc.asyncProperty(fc.array(recipientGroup, { minLength: 1, maxLength: 5 }), messageId, async (recipients, id) => {
          const report = await parseReport(dsn(recipients, id));
          expect(report).toEqual({
            kind: "dsn",
            recipients: recipients.map((r) => ({ recipient: parseAddress(r.address)!.address, action: r.action, status: r.status, diagnostic: r.diagnostic?.replace(/\s+/g, " ").trim() })),
            originalMessageId: id,
          });
        }),
      );
    },
    testTimeout(),
  );
});
