// The common outgoing message, written directly: headers of plain ASCII that need no encoding or
// quoting, text and HTML bodies that are 7bit data (RFC 2045 §2.7: ASCII, short lines), no
// attachments. The bytes are the ones nodemailer's MailComposer writes for the same message
// (test/mail/compose.test.ts compares the two for every shape written here), without its stream
// pipeline, which made composing the largest CPU cost of a send through the API.

import { randomBytes } from "node:crypto";
import { foldLines, hasLongerLines, isPlainText } from "nodemailer/lib/mime-funcs";
import type { PreparedMessage } from "./prepared-message";

// Written as they are by nodemailer: an ASCII dot-atom local part at an ASCII host name (no
// quoted local part, no IDN), a display name of word characters and spaces (no quotes).
const PLAIN_ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9.-]+$/;
const PLAIN_NAME = /^[\w ]*$/;
// Printable ASCII needs no encoded word (RFC 2047); "=?" is left to nodemailer, as it could read as one.
const PLAIN_TEXT = /^[\x20-\x7e]*$/;
const PLAIN_ID = /^<[\x21-\x7e]+>$/;
// nodemailer's 7bit rule: plain text (isPlainText) with no line longer than this.
const MAX_7BIT_LINE = 76;
const FOLD_AT = 76;

const is7bitBody = (body: string | undefined) => body === undefined || (body !== "" && isPlainText(body) && !hasLongerLines(body, MAX_7BIT_LINE));

function isPlain(message: PreparedMessage): boolean {
  const { text, html } = message;
  return (
    message.attachments.length === 0 &&
    (text !== undefined || html !== undefined) &&
    is7bitBody(text) &&
    is7bitBody(html) &&
    [message.from, ...message.to, ...message.cc].every((address) => PLAIN_ADDRESS.test(address)) &&
    [message.fromName, ...message.toNames, ...message.ccNames].every((name) => PLAIN_NAME.test(name)) &&
    PLAIN_TEXT.test(message.subject) &&
    !message.subject.includes("=?") &&
    [message.messageId, ...(message.inReplyTo ? [message.inReplyTo] : []), ...message.references].every((id) => PLAIN_ID.test(id))
  );
}

const field = (name: string, value: string) => foldLines(`${name}: ${value}`, FOLD_AT);

/** `Name <address>`, or the bare address without a name: a plain name needs no quotes (PLAIN_NAME). */
const mailbox = (name: string | undefined, address: string) => (name ? `${name} <${address}>` : address);

/** Lines end in CRLF (RFC 5322 §2.1); nodemailer turns every bare LF into CRLF and leaves a lone CR. */
const crlf = (body: string) => body.replace(/\r?\n/g, "\r\n");

/** A part's header block (ending in its blank line) and its 7bit content. */
const leaf = (contentType: string, body: string) =>
  `Content-Type: ${contentType}; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${crlf(body)}`;

/** The message as nodemailer writes it, or undefined when it needs more than 7bit ASCII. */
export function compose7bit(message: PreparedMessage): Buffer | undefined {
  if (!isPlain(message)) return undefined;
  const { fromName, from, to, toNames, cc, ccNames, inReplyTo, references, subject, text, html } = message;
  // nodemailer's order: the address fields, threading, subject, id, date; Content-Type last.
  const headers = [field("From", mailbox(fromName, from))];
  if (to.length > 0) headers.push(field("To", to.map((address, i) => mailbox(toNames[i], address)).join(", ")));
  if (cc.length > 0) headers.push(field("Cc", cc.map((address, i) => mailbox(ccNames[i], address)).join(", ")));
  if (inReplyTo) headers.push(field("In-Reply-To", inReplyTo));
  if (references.length > 0) headers.push(field("References", references.join(" ")));
  if (subject) headers.push(field("Subject", subject));
  headers.push(field("Message-ID", message.messageId), field("Date", message.date.toUTCString().replace(/GMT/, "+0000")));

  if (text !== undefined && html !== undefined) {
    const boundary = `--_NmP-${randomBytes(8).toString("hex")}-Part_1`;
    headers.push("MIME-Version: 1.0", field("Content-Type", `multipart/alternative; boundary="${boundary}"`));
    const parts = [leaf("text/plain", text), leaf("text/html", html)].map((part) => `--${boundary}\r\n${part}`).join("\r\n");
    return Buffer.from(`${headers.join("\r\n")}\r\n\r\n${parts}\r\n--${boundary}--\r\n`, "latin1");
  }

  const body = crlf(text ?? html!);
  headers.push("Content-Transfer-Encoding: 7bit", "MIME-Version: 1.0", `Content-Type: ${text !== undefined ? "text/plain" : "text/html"}; charset=utf-8`);
  // The message ends with a line break, as nodemailer's last stage makes sure.
  const end = body.endsWith("\n") ? "" : body.endsWith("\r") ? "\n" : "\r\n";
  return Buffer.from(`${headers.join("\r\n")}\r\n\r\n${body}${end}`, "latin1");
}
