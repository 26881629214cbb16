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
  // (maxHtmlLengthToParse) rejects the whole message instead.
  skipHtmlToText: true,
  // textAsHtml is not used, and building it runs linkify over the text.
  skipTextToHtml: true,
  // The stored HTML stays as sent: inlining cid: images as data: URLs would
  // copy every inline image into the HTML.
  keepCidLinks: true,
};

/** Raised when a message is over MAX_HEADER_BYTES or MAX_MIME_PARTS. */
export class MessageLimitError extends Error {
  override readonly name = "MessageLimitError";
}

/** mailsplit marks its size-limit errors with `code: "EMAXLEN"`. */
export function asLimitError(error: unknown): unknown {
  const isLimit = error instanceof Error && (error as Error & { code?: string }).code === "EMAXLEN";
  return isLimit ? new MessageLimitError(error.message, { cause: error }) : error;
}
