// Received messages: turns RFC 5322 bytes into the plain fields inboxd stores,
// threads and shows, via mailparser's simpleParser. Limits: see ./limits.

import { Readable } from "node:stream";
import { simpleParser, type AddressObject, type Attachment, type EmailAddress, type HeaderLines } from "mailparser";
import { storableText } from "../store/storable-text";
import { parseAddress, parseInternationalAddress } from "./address";
import { BOUNDED_PARSER_OPTIONS, MAX_HTML_TO_TEXT_CHARS, asLimitError } from "./limits";

export interface ParsedAttachment {
  filename?: string;
  contentType: string;
  /** Decoded bytes. */
  content: Buffer;
  /** Content-ID without angle brackets, as `cid:` URLs in the HTML name it. */
  contentId?: string;
  /** Content-Disposition: inline (RFC 2183 §2.1), e.g. an image the HTML shows. */
  inline: boolean;
}

export interface ParsedMessage {
  messageId?: string;
  inReplyTo?: string;
  references: string[];
  /** First valid From address, ASCII domain (a local part in UTF-8 kept, RFC 6532); absent when there is none. */
  from?: string;
  /** Display name of that same mailbox. */
  fromName?: string;
  /** Valid addresses only, groups flattened, in header order. */
  to: string[];
  cc: string[];
  replyTo?: string[];
  /** RFC 2047 encoded words decoded; "" when there is no Subject. */
  subject: string;
  /** The text parts, or text made from the HTML when there are none. */
  text?: string;
  /** Only when the message has an HTML part. */
  html?: string;
  /** Absent when the Date field is missing or unreadable. */
  date?: Date;
  attachments: ParsedAttachment[];
  /** Top-level header fields by lower-case name, values unfolded and not decoded, in order. */
  headers: Map<string, string[]>;
}

/**
 * A large message goes to the parser a slice at a time. Given whole, a 20 MB message reached its
 * base64 decoder as one piece, held there as two 20 MB strings and the decoded bytes at once: the
 * parse peaked at 77 MB over the message itself, 36 MB in slices (about 25 % slower).
 */
const STREAM_SLICE_BYTES = 64 * 1024;

function* slices(pieces: readonly Buffer[]): Generator<Buffer> {
  for (const piece of pieces) for (let at = 0; at < piece.length; at += STREAM_SLICE_BYTES) yield piece.subarray(at, at + STREAM_SLICE_BYTES);
}

/**
 * An attachment's media type as its part declares it (RFC 2045 §5). mailparser puts a guess from
 * the file name in place of `application/octet-stream`: `page.html` sent as inert bytes came back
 * `text/html`, an active type for whoever downloads it.
 */
function declaredType(attachment: Attachment): string {
  const declared = attachment.headers.get("content-type") as { value?: unknown } | undefined;
  return declared?.value === "application/octet-stream" ? declared.value : attachment.contentType;
}

/**
 * Parses one message. Bodies in any charset iconv-lite or encoding-japanese
 * know (ISO-8859-*, windows-125x, ISO-2022-JP, ...) come out as strings.
 * Rejects with MessageLimitError past the limits in ./limits; otherwise it is
 * lenient, as received mail has to be.
 */
export async function parseMessage(message: Buffer | readonly Buffer[]): Promise<ParsedMessage> {
  // Pieces (the message's bytes in order) spare the caller a copy of a large message to join them.
  const pieces = Buffer.isBuffer(message) ? [message] : message;
  const size = pieces.reduce((sum, piece) => sum + piece.length, 0);
  const input = size > STREAM_SLICE_BYTES ? Readable.from(slices(pieces)) : pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, size);
  const mail = await simpleParser(input, BOUNDED_PARSER_OPTIONS).catch((error: unknown) => {
    throw asLimitError(error);
  });
  const headers = rawHeaders(mail.headerLines);
  const sender = mailboxes(mail.from)[0];
  const replyTo = addresses(mail.replyTo);
  const html = mail.html === false ? undefined : mail.html;
  const text = mail.text?.trim() ? mail.text : html === undefined ? undefined : await htmlToText(html);

  return {
    messageId: storableText(mail.messageId),
    inReplyTo: storableText(mail.inReplyTo),
    references: mail.references === undefined ? [] : [mail.references].flat().map((reference) => storableText(reference)),
    from: sender?.address,
    fromName: storableText(sender?.name || undefined),
    to: addresses(mail.to),
    cc: addresses(mail.cc),
    replyTo: replyTo.length > 0 ? replyTo : undefined,
    subject: storableText(mail.subject ?? ""),
    text: storableText(text),
    html: storableText(html),
    date: readableDate(headers) ? mail.date : undefined,
    attachments: mail.attachments.map((attachment) => ({
      // `filename=""` and `Content-ID: <>` name nothing: left out, as a part without them.
      filename: storableText(attachment.filename) || undefined,
      contentType: storableText(declaredType(attachment)),
      content: attachment.content,
      contentId: storableText(attachment.cid) || undefined,
      inline: attachment.contentDisposition === "inline",
    })),
    headers,
  };
}

/**
 * Header lines as mailsplit kept them, unfolded (RFC 5322 §2.2.3: a CRLF
 * followed by white space is removed, the white space kept).
 */
function rawHeaders(lines: HeaderLines): Map<string, string[]> {
  const headers = new Map<string, string[]>();
  for (const { key, line } of lines) {
    const value = line.slice(line.indexOf(":") + 1).replace(/\r?\n(?=[ \t])/g, "").trim();
    const values = headers.get(key);
    if (values) values.push(value);
    else headers.set(key, [value]);
  }
  return headers;
}

/** Mailboxes of one or more address fields whose address parseAddress (or, for a UTF-8 local part, parseInternationalAddress) accepts, groups flattened. */
function mailboxes(field: AddressObject | AddressObject[] | undefined): { address: string; name: string }[] {
  const flatten = (entry: EmailAddress): EmailAddress[] => (entry.group ? entry.group.flatMap(flatten) : [entry]);
  return [field ?? []]
    .flat()
    .flatMap((object) => object.value.flatMap(flatten))
    .flatMap((entry) => {
      const parsed = entry.address ? (parseAddress(entry.address) ?? parseInternationalAddress(entry.address)) : null;
      return parsed ? [{ address: parsed.address, name: entry.name }] : [];
    });
}

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  return mailboxes(field).map((mailbox) => mailbox.address);
}

/** mailparser turns an unreadable Date field into the current time; that is not the message's date. */
function readableDate(headers: Map<string, string[]>): boolean {
  const value = headers.get("date")?.[0];
  return value !== undefined && !Number.isNaN(new Date(value).getTime());
}

/**
 * mailparser converts HTML to text only for a message that is nothing but one
 * HTML part, and without a bound on the HTML's length. A text version is wanted
 * whenever there is no text part, so the (capped) HTML is handed back to it as
 * such a message: the same conversion mailparser applies, without depending on
 * its html-to-text dependency directly.
 */
export async function htmlToText(html: string): Promise<string | undefined> {
  const htmlOnly = Buffer.concat([
    Buffer.from("Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"),
    Buffer.from(html.slice(0, MAX_HTML_TO_TEXT_CHARS)),
  ]);
  // html-to-text gives up on pathological markup (e.g. nesting deeper than its
  // recursion allows); the message is still readable as HTML then.
  const converted = await simpleParser(htmlOnly, { ...BOUNDED_PARSER_OPTIONS, skipHtmlToText: false }).catch(() => null);
  return converted?.text || undefined;
}
