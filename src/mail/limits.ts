// Bounds on the work spent parsing one received message. Everything here is
// untrusted input from the network; these keep one message from costing more
// than a few hundred milliseconds or a few times its own size in memory.
//
// Not enforced here: the size of the whole message. Callers hand in messages
// the SMTP server (SIZE, RFC 1870) or the API (20 MB body) already bounded,
// and attachment bytes are at most that much.

import type { SimpleParserOptions } from "mailparser";

/**
 * Header block of one MIME part, in bytes. Postfix keeps at most 100 KiB of
 * any one header field (header_size_limit); a real message with a dozen
 * Received fields, DKIM and ARC sets stays well under 64 KiB in all.
 * mailsplit's own default is 1 MiB.
 */
export const MAX_HEADER_BYTES = 256 * 1024;

/**
 * MIME parts in one message, nested ones included; this also caps the number
 * of attachments. mailsplit's own default is 1000.
 */
export const MAX_MIME_PARTS = 500;

/**
 * HTML characters fed to the HTML-to-text conversion when a message has no
 * text part; the text of any HTML past this point is left out. html-to-text is
 * synchronous: under Bun 1.4.5 a 110 kB newsletter takes about 11 ms, while
 * deeply nested markup costs up to ~1 s per MiB, and at this cap ~130 ms at
 * worst. Gmail clips HTML past 102 kB, so senders keep under it anyway.
 */
export const MAX_HTML_TO_TEXT_CHARS = 128 * 1024;

/** mailsplit options that simpleParser passes through but @types/mailparser omits. */
interface SplitterOptions {
  maxHeadSize: number;
  maxChildNodes: number;
  /** Keep message/rfc822 parts as attachments holding the raw bytes. */
  ignoreEmbedded?: boolean;
}

export type BoundedParserOptions = SimpleParserOptions & SplitterOptions;

export const BOUNDED_PARSER_OPTIONS: BoundedParserOptions = {
  maxHeadSize: MAX_HEADER_BYTES,
  maxChildNodes: MAX_MIME_PARTS,
  // Converted separately, with MAX_HTML_TO_TEXT_CHARS: mailparser's own bound
  // (maxHtmlLengthToParse) rejects the whole message instead. An HTML part
  // beside text parts is converted by the parser, from as many characters
  // (patches/mailparser+3.9.31.patch: it was left out of the text version).
  skipHtmlToText: true,
  maxHtmlLengthToParse: MAX_HTML_TO_TEXT_CHARS,
  // textAsHtml is not used, and building it runs linkify over the text; a text
  // part beside HTML parts is still escaped into the HTML version (the patch).
  skipTextToHtml: true,
  // The stored HTML stays as sent: inlining cid: images as data: URLs would
  // copy every inline image into the HTML.
  keepCidLinks: true,
};

/**
 * What the top-level header block of a message is over, if anything: MAX_HEADER_BYTES, or
 * `maxLines` lines with the folded continuations counted. Asked before any library sees the
 * message: mailauth merges folded lines one at a time, in time that grows with the square of
 * their number (60,000 folds take minutes, 2,000 about 40 ms). Line ends are CRLF here: the SMTP
 * receiver refuses bare LF before it asks.
 */
export function headerOverLimit(raw: Uint8Array, maxLines: number): string | undefined {
  const buffer = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const scanned = Math.min(buffer.length, MAX_HEADER_BYTES);
  let lines = 0;
  for (let start = 0; start < scanned; ) {
    const end = buffer.indexOf(0x0a, start);
    if (end === -1 || end >= scanned) break;
    // The empty line ends the header (RFC 5322 §2.1).
    if (end === start + 1) return undefined;
    if (++lines > maxLines) return `more than ${maxLines} header lines`;
    start = end + 1;
  }
  return buffer.length > MAX_HEADER_BYTES ? `a header block over ${MAX_HEADER_BYTES} bytes` : undefined;
}

/** Raised when a message is over MAX_HEADER_BYTES or MAX_MIME_PARTS. */
export class MessageLimitError extends Error {
  override readonly name = "MessageLimitError";
}

/** mailsplit marks its size-limit errors with `code: "EMAXLEN"`. */
export function asLimitError(error: unknown): unknown {
  const isLimit = error instanceof Error && (error as Error & { code?: string }).code === "EMAXLEN";
  return isLimit ? new MessageLimitError(error.message, { cause: error }) : error;
}
