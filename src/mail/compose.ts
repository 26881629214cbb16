// Outgoing messages: turns plain values into the RFC 5322 bytes inboxd stores,
// signs and delivers, via nodemailer's MailComposer (or, for the common 7bit
// message, compose-7bit.ts, which writes the same bytes directly).

import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import MailComposer from "nodemailer/lib/mail-composer";
import { encodeWord } from "nodemailer/lib/mime-funcs";
import { takeTurn } from "../event-loop";
import { parseAddress } from "./address";
import { compose7bit } from "./compose-7bit";
import type { ComposeAttachment, PreparedMessage } from "./prepared-message";

/** A recipient: a bare address, or an address with the display name its To or Cc field shows. */
export type Recipient = string | { address: string; name?: string };

export interface ComposeInput {
  from: string;
  /** Display name shown beside the From address. */
  fromName?: string;
  to: Recipient[];
  cc?: Recipient[];
  /** Envelope-only recipients: never written into any header (their names go nowhere either). */
  bcc?: Recipient[];
  subject: string;
  text?: string;
  html?: string;
  attachments?: ComposeAttachment[];
  /** `<id@host>`, see newMessageId. */
  messageId: string;
  date: Date;
  inReplyTo?: string;
  references?: string[];
}

// RFC 5322 §3.6.4 id-right = dot-atom-text; a host name always fits.
const MESSAGE_ID_HOST = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+(?:\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+)*$/;
// RFC 2392 §2 / RFC 5322 §3.6.4: a Content-ID is a msg-id; written in brackets, it holds no bracket, space or control.
const CONTENT_ID = /^[\x21-\x3b\x3d\x3f-\x7e]{1,250}$/;
/** Whether a Content-ID (without its brackets) can be written as one; another is left out. */
export const isContentId = (cid: string) => CONTENT_ID.test(cid);
// RFC 6838 §4.2 type/subtype names, optionally followed by parameters.
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(?:\s*;.*)?$/i;
// RFC 2046 §5: the types whose body is other entities, not a file.
const COMPOSITE_TYPE = /^\s*(?:message|multipart)\//i;
// Every C0 control and DEL: a CR or LF in a header value would end the field and
// start one chosen by whoever wrote the value (header injection); NUL is not
// allowed in a message at all (RFC 5322 §3.5, RFC 5321 §4.1.1.4).
const CONTROL_CHARACTERS = /[\x00-\x1f\x7f]+/g;

/** A fresh Message-ID (RFC 5322 §3.6.4): `<128 random bits@hostname>`. */
export function newMessageId(hostname: string): string {
  if (!MESSAGE_ID_HOST.test(hostname)) throw new Error(`not a host name for a Message-ID: ${JSON.stringify(hostname)}`);
  return `<${randomBytes(16).toString("hex")}@${hostname}>`;
}

/**
 * Every address a message built from this input goes to, To, Cc and Bcc,
 * each once (compared case-insensitively, the first spelling kept): the
 * RCPT TO list for delivery, since Bcc is in no header.
 */
export function envelopeRecipients(input: Pick<ComposeInput, "to" | "cc" | "bcc">): string[] {
  const all = [...input.to, ...(input.cc ?? []), ...(input.bcc ?? [])];
  const byMailbox = new Map<string, string>();
  all.forEach((recipient, i) => {
    const wire = wireAddress(addressOf(recipient), `recipient ${i + 1}`);
    if (!byMailbox.has(wire.toLowerCase())) byMailbox.set(wire.toLowerCase(), wire);
  });
  return [...byMailbox.values()];
}

/**
 * Checks and cleans the input: addresses must be valid (it throws otherwise); text that ends up
 * in headers is cleaned of control characters so no input can add a header field.
 */
export function prepareMessage(input: ComposeInput): PreparedMessage {
  const messageId = cleanMessageId(input.messageId);
  if (!messageId) throw new Error("composeMessage: messageId is empty");
  // Bcc goes in no header, but an invalid one is still refused.
  (input.bcc ?? []).forEach((recipient, i) => wireAddress(addressOf(recipient), `bcc ${i + 1}`));
  const cc = input.cc ?? [];
  return {
    from: wireAddress(input.from, "from"),
    fromName: phraseText(input.fromName ?? ""),
    to: input.to.map((recipient, i) => wireAddress(addressOf(recipient), `to ${i + 1}`)),
    toNames: input.to.map(nameOf),
    cc: cc.map((recipient, i) => wireAddress(addressOf(recipient), `cc ${i + 1}`)),
    ccNames: cc.map(nameOf),
    subject: foldableSubject(cleanHeaderText(input.subject)),
    messageId,
    date: input.date,
    inReplyTo: input.inReplyTo === undefined ? "" : cleanMessageId(input.inReplyTo),
    references: (input.references ?? []).map(cleanMessageId).filter((id) => id !== ""),
    text: input.text === undefined ? undefined : withoutLoneCr(input.text),
    html: input.html === undefined ? undefined : withoutLoneCr(input.html),
    attachments: (input.attachments ?? []).map((attachment) => ({
      filename: attachment.filename === undefined ? undefined : phraseText(attachment.filename),
      contentType: cleanContentType(attachment.contentType),
      content: attachment.content,
      ...(attachment.cid !== undefined && isContentId(attachment.cid) ? { cid: attachment.cid } : {}),
    })),
  };
}

/**
 * Builds the message: text/plain, text/html, or multipart/alternative when both
 * are given, wrapped in multipart/mixed when there are attachments. Throws on an
 * invalid address (see prepareMessage).
 */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const message = prepareMessage(input);
  return compose7bit(message) ?? composeMime(message);
}

/**
 * Bytes of an attachment base64-encoded in one turn of the event loop: nodemailer encodes a Buffer
 * in one piece (an 18 MB attachment held the loop for 70-80 ms), and a stream chunk by chunk.
 */
const ENCODE_SLICE_BYTES = 256 * 1024;

async function* slicesWithTurns(content: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < content.length; at += ENCODE_SLICE_BYTES) {
    yield content.subarray(at, at + ENCODE_SLICE_BYTES);
    await takeTurn();
  }
}

/** Any message, through nodemailer's MailComposer. */
export function composeMime(message: PreparedMessage): Promise<Buffer> {
  const composer = new MailComposer({
    from: { name: message.fromName, address: message.from },
    to: message.to.map((address, i) => ({ name: message.toNames[i] ?? "", address })),
    cc: message.cc.map((address, i) => ({ name: message.ccNames[i] ?? "", address })),
    subject: message.subject,
    messageId: message.messageId,
    date: message.date,
    inReplyTo: message.inReplyTo || undefined,
    references: message.references.length > 0 ? message.references : undefined,
    text: message.text,
    html: message.html,
    attachments: message.attachments.map((attachment) => (attachment.content.length > ENCODE_SLICE_BYTES ? { ...attachment, content: Readable.from(slicesWithTurns(attachment.content)) } : attachment)),
    // RFC 5322 §2.1: lines end in CRLF, whatever the text fields contain.
    newline: "win",
  });
  return composer.compile().build();
}

const addressOf = (recipient: Recipient) => (typeof recipient === "string" ? recipient : recipient.address);
/** The display name as it goes into the header ("" for none), cleaned like any header text. */
const nameOf = (recipient: Recipient) => (typeof recipient === "string" ? "" : phraseText(recipient.name ?? ""));

function wireAddress(address: string, field: string): string {
  const parsed = parseAddress(address);
  if (!parsed) throw new Error(`composeMessage: invalid ${field} address ${JSON.stringify(address)}`);
  return parsed.address;
}

/** Subject, display name or filename: controls become one space. */
function cleanHeaderText(value: string): string {
  return value.replace(CONTROL_CHARACTERS, " ").trim();
}

/**
 * RFC 5322 §2.1.1: a line holds at most 998 octets, and a header field folds only at white
 * space, so a word (or an id) longer than this, with its field's name, cannot be written.
 */
const LONGEST_HEADER_WORD = 900;

function hasLongerWord(text: string): boolean {
  for (let at = 0, run = 0; at < text.length; at++) {
    run = text.charCodeAt(at) <= 0x20 ? 0 : run + 1;
    if (run > LONGEST_HEADER_WORD) return true;
  }
  return false;
}

/**
 * A run of spaces the composer would fold into a line of spaces alone: RFC 5322 §3.2.2 allows
 * such lines only in its obsolete syntax, which must not be generated (§4), and a naive reader
 * takes one for the end of the header.
 */
const WIDE_SPACE = / {70,}/;

/**
 * A display name or file name as it goes out: cleaned as any header text, and a run of spaces
 * as wide as a line made one (a quoted name is no place for encoded words, RFC 2047 §5, and the
 * composer folded inside it: the name read back changed all the same).
 */
const phraseText = (value: string) => cleanHeaderText(value).replace(new RegExp(WIDE_SPACE.source, "g"), " ");

/**
 * A subject with a word too long for a line goes out as encoded words (RFC 2047 §2), which may
 * be cut anywhere and folded between: readers show the same text. So does one with a run of
 * spaces as wide as a line (WIDE_SPACE), and one holding "=?": as it is, a reader would decode
 * what reads as an encoded word in it (§5) and show other text than the sender's. A non-ASCII one
 * the composer encodes and cuts itself.
 */
const foldableSubject = (subject: string) => (hasLongerWord(subject) || WIDE_SPACE.test(subject) || subject.includes("=?") ? encodeWord(subject, "B", 52) : subject);

/** RFC 5322 §2.3: CR only before LF. Each composer ends lines in CRLF, and left a lone CR as it was. */
const withoutLoneCr = (body: string) => body.replace(/\r(?!\n)/g, "\n");

/**
 * `<id>` with no whitespace or control characters inside. Ids read from received mail may lack
 * the brackets; they are kept, only made safe. Left out (""), so that a reply's In-Reply-To and
 * References name the others: one too long for a line; one without an `@`, which is no msg-id
 * (RFC 5322 §3.6.4: a References of words, "see previous mail", went out as `<see> <previous>
 * <mail>`); and one holding non-ASCII, which RFC 6532 allows in internationalized mail only, and
 * inboxd sends without SMTPUTF8 (RFC 5322 §2.2: header fields are US-ASCII).
 */
function cleanMessageId(value: string): string {
  const id = value.replace(/[\s\x00-\x1f\x7f<>]+/g, "");
  return id === "" || id.length > LONGEST_HEADER_WORD || !id.includes("@") || /[^\x21-\x7e]/.test(id) ? "" : `<${id}>`;
}

/**
 * An attachment's type as it goes out. A composite type is sent as application/octet-stream: a
 * message/* part may not be base64 (RFC 2046 §5.2.1), so nodemailer sent its bytes raw (lines of
 * any length, NUL, 8-bit to a server without 8BITMIME), and a multipart/* leaf is no container
 * (RFC 2045 §6.4), so readers found no file in it.
 */
function cleanContentType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const cleaned = cleanHeaderText(contentType);
  return MEDIA_TYPE.test(cleaned) && !COMPOSITE_TYPE.test(cleaned) ? cleaned : "application/octet-stream";
}
