// Crafted header fields against the whole analysis of a received message (src/smtp/analyze.ts:
// the parser, mailauth's SPF, DKIM, DMARC and ARC, and our own trace edits): every field the
// analysis reads by name with every shape that makes a scan go back over what it read. About
// 192 KiB of it stays under the header bound the SMTP server checks first (256 KiB, and
// INBOXD_SMTP_MAX_HEADER_LINES lines), and is enough for a quadratic path to take seconds. Found
// so: "(" in an Authentication-Results field (5 s at 200 KiB, src/smtp/trace.ts), blanks in a
// DKIM-Signature or ARC field (19-21 s) or in a first line that is no field, and dots in a domain
// (both about 1 s at 48 KiB: mailauth's trims, patches/mailauth+7.1.0.patch).
import { describe, expect, test } from "bun:test";
import type { DNSResolver } from "mailauth";
import { loadConfig } from "../../src/config";
import { MAX_HEADER_BYTES } from "../../src/mail/limits";
import { analyzeMessage } from "../../src/smtp/analyze";
import { dnsBudgetOf } from "../../src/smtp/dns-budget";
import { CALL_CEILING_MS } from "./budget";

const noRecords = (async () => {
  throw Object.assign(new Error("no such record"), { code: "ENOTFOUND" });
}) as unknown as DNSResolver;
const identity = { clientIp: "127.0.0.1", helo: "client.example", mailFrom: "a@sender.test" };
const settings = { authservId: "mx.inboxd.test", resolver: noRecords, dnsBudget: dnsBudgetOf(loadConfig({}).smtpAnalysisTimeoutMs) };

const fields = [
  "Authentication-Results", "From", "Sender", "To", "Cc", "Reply-To", "Subject", "Date", "Message-ID", "In-Reply-To",
  "References", "Received", "Return-Path", "DKIM-Signature", "ARC-Seal", "ARC-Message-Signature",
  "ARC-Authentication-Results", "Content-Type", "Content-Transfer-Encoding", "Content-Disposition", "MIME-Version",
];

/**
 * Pieces repeated to fill a field: open comments, quotes and brackets, separators, dots, encoded
 * words, blanks, and folds whose lines are blank to their end.
 */
const shapes = ["(", "(a", "\\(", ")", "\"a", "<", "<a", "a:", "a;", "@", ".", "a=", "; ", ", ", "=?utf-8?q?a?=", " ", "\t", `${" \t".repeat(48)}\r\n `];

/** The SMTP server refuses a header of more lines (INBOXD_SMTP_MAX_HEADER_LINES) before any analysis. */
const { smtpMaxHeaderLines } = loadConfig({});

/** About 192 KiB of one piece between two letters, in at most the lines the SMTP server lets through. */
function crafted(piece: string): string {
  const size = Math.floor((MAX_HEADER_BYTES * 3) / 4);
  const count = Math.min(Math.floor(size / piece.length), piece.includes("\n") ? smtpMaxHeaderLines - 10 : Infinity);
  return `x${piece.repeat(count)}x`;
}

/** Each field with each shape, and each shape as a first line that is no field at all. */
const messages = [
  ...fields.flatMap((name) => shapes.map((piece) => ({ what: `${name} of ${JSON.stringify(piece)}`, text: `${name === "From" ? "" : "From: a@sender.test\r\n"}${name}: ${crafted(piece)}\r\n\r\nbody\r\n` }))),
  ...shapes.map((piece) => ({ what: `a first line of ${JSON.stringify(piece)}`, text: `${crafted(piece)}: y\r\nFrom: a@sender.test\r\n\r\nbody\r\n` })),
];

describe("analysis of crafted header fields", () => {
  test(
    `${messages.length} crafted messages are each analysed within ${CALL_CEILING_MS} ms`,
    async () => {
      const slow: string[] = [];
      for (const { what, text } of messages) {
        const started = performance.now();
        await analyzeMessage(Buffer.from(text, "latin1"), identity, settings).catch((error: Error) => {
          if (error.name !== "MessageLimitError") throw error;
        });
        const elapsed = performance.now() - started;
        if (elapsed > CALL_CEILING_MS) slow.push(`${what}: ${elapsed.toFixed(0)} ms`);
      }
      expect(slow).toEqual([]);
    },
    5 * 60_000,
  );
});
