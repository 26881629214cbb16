// Reports that come back about mail inboxd sent: delivery status notifications
// (bounces, RFC 3464) and abuse feedback (complaints, RFC 5965). Both arrive as
// multipart/report (RFC 6522) with a machine-readable part and, usually, the
// original message or its header.

import { simpleParser, type Attachment } from "mailparser";
import { storableText } from "../store/storable-text";
import { parseAddress } from "./address";
import { BOUNDED_PARSER_OPTIONS, asLimitError, type BoundedParserOptions } from "./limits";

export interface DsnRecipient {
  /** Final-Recipient (else Original-Recipient) address. */
  recipient: string;
  /** RFC 3464 §2.3.3: failed, delayed, delivered, relayed or expanded. */
  action: string;
  /** RFC 3463 status code, `5.1.1`. */
  status: string;
  /** Diagnostic-Code without its type, usually the remote server's SMTP reply. */
  diagnostic?: string;
}

export interface DsnReport {
  kind: "dsn";
  /** Only `failed` entries are bounces; `delayed` means the sender still retries. */
  recipients: DsnRecipient[];
  /** Message-ID of the message the report is about. */
  originalMessageId?: string;
}

export interface ArfReport {
  kind: "arf";
  /** RFC 5965 §7.3: abuse, fraud, virus, other, not-spam; RFC 6591: auth-failure. */
  feedbackType: string;
  originalMessageId?: string;
  /** First Original-Rcpt-To: who complained. Providers often redact it. */
  originalRecipient?: string;
}

export type DeliveryReport = DsnReport | ArfReport;

// RFC 3464 §2.1 delivery-status; RFC 6533 §6.2 its internationalised twin.
const DELIVERY_STATUS_TYPES = ["message/delivery-status", "message/global-delivery-status"];
// RFC 5965 §2 (c).
const FEEDBACK_REPORT_TYPE = "message/feedback-report";
// RFC 6522 §3 third part: the returned message (RFC 2046 §5.2.1, RFC 6532 §3.7)
// or only its header (RFC 6522 §4, RFC 6533 §6.3).
const ORIGINAL_MESSAGE_TYPES = ["message/rfc822", "message/global", "text/rfc822-headers", "message/global-headers"];
// By default mailparser appends a message/delivery-status part to the text, and
// flattens a message/rfc822 part marked inline (as Yahoo and Microsoft send it)
// into the text, dropping its Message-ID. Here both stay attachments holding
// their raw bytes.
const REPORT_PARSER_OPTIONS: BoundedParserOptions = {
  ...BOUNDED_PARSER_OPTIONS,
  keepDeliveryStatus: true,
  ignoreEmbedded: true,
};
// RFC 3463 §2 status-code = class "." subject "." detail.
const STATUS_CODE = /\b[245]\.\d{1,3}\.\d{1,3}\b/;

/**
 * Recognises a DSN or an ARF report and reads what inboxd acts on; null for
 * any other message, and for a report without a usable machine-readable part.
 */
export async function parseReport(raw: Buffer): Promise<DeliveryReport | null> {
  const mail = await simpleParser(raw, REPORT_PARSER_OPTIONS).catch((error: unknown) => {
    throw asLimitError(error);
  });

  // RFC 6522 §3: multipart/report MUST be the top-level type of a report.
  // Media types are case-insensitive (RFC 2045 §5.1); mailsplit lower-cases
  // those of the parts, mailparser leaves the top-level one as written.
  const contentType = mail.headers.get("content-type");
  const topLevelType = typeof contentType === "object" && "params" in contentType ? contentType.value : "";
  if (topLevelType.toLowerCase() !== "multipart/report") return null;

  const part = (types: string[]) => mail.attachments.find((attachment) => types.includes(attachment.contentType));
  const deliveryStatus = part(DELIVERY_STATUS_TYPES);
  const feedbackReport = part([FEEDBACK_REPORT_TYPE]);
  const original = part(ORIGINAL_MESSAGE_TYPES);

  if (deliveryStatus) return readDsn(storableText(deliveryStatus.content.toString("utf8")), original);
  if (feedbackReport) return readArf(storableText(feedbackReport.content.toString("utf8")), original);
  return null;
}

/**
 * RFC 3464 §2.2 per-message fields, then one group of §2.3 per-recipient fields
 * per recipient. Groups are told apart by their fields rather than by position,
 * for senders that leave the per-message group out.
 */
async function readDsn(deliveryStatus: string, original: Attachment | undefined): Promise<DsnReport | null> {
  const groups = fieldGroups(deliveryStatus);
  const recipients = groups.map(readDsnRecipient).filter((recipient) => recipient !== null);
  if (recipients.length === 0) return null;
  // Gmail also names the original in a per-message X-Original-Message-ID.
  const announcedId = groups.find((group) => group.has("x-original-message-id"))?.get("x-original-message-id");
  const originalMessageId = (await messageIdOf(original)) ?? announcedId;
  return { kind: "dsn", recipients, originalMessageId };
}

function readDsnRecipient(fields: Map<string, string>): DsnRecipient | null {
  // RFC 3464 §2.3.2 Final-Recipient is required; §2.3.1 Original-Recipient is
  // the address as first submitted, used when a sender leaves the final one out.
  const recipient = typedValue(fields.get("final-recipient") ?? fields.get("original-recipient"));
  const action = fields.get("action")?.match(/^[a-z]+/i)?.[0].toLowerCase();
  const status = fields.get("status")?.match(STATUS_CODE)?.[0];
  if (!recipient || !action || !status) return null;
  const diagnostic = typedValue(fields.get("diagnostic-code"));
  return { recipient: addressValue(recipient), action, status, diagnostic: diagnostic || undefined };
}

/** RFC 5965 §3.1: one block of header-like fields. */
async function readArf(feedbackReport: string, original: Attachment | undefined): Promise<ArfReport | null> {
  const [fields] = fieldGroups(feedbackReport);
  const feedbackType = fields?.get("feedback-type")?.match(/^[a-z0-9-]+/i)?.[0].toLowerCase();
  if (!feedbackType) return null;
  const originalRecipient = fields.get("original-rcpt-to");
  return {
    kind: "arf",
    feedbackType,
    originalMessageId: await messageIdOf(original),
    originalRecipient: originalRecipient ? addressValue(originalRecipient) : undefined,
  };
}

/**
 * Splits a block of RFC 5322-style fields into groups at blank lines
 * (RFC 3464 §2.1), unfolding continuation lines (RFC 5322 §2.2.3). Names are
 * lower-cased; a repeated name keeps its first value.
 */
function fieldGroups(text: string): Map<string, string>[] {
  const groups: Map<string, string>[] = [];
  for (const block of text.split(/\r?\n[ \t]*\r?\n/)) {
    const group = new Map<string, string>();
    for (const field of block.replace(/\r?\n(?=[ \t])/g, "").split(/\r?\n/)) {
      const colon = field.indexOf(":");
      if (colon <= 0) continue;
      const name = field.slice(0, colon).trim().toLowerCase();
      if (!group.has(name)) group.set(name, field.slice(colon + 1).replace(/\s+/g, " ").trim());
    }
    if (group.size > 0) groups.push(group);
  }
  return groups;
}

/** `rfc822; user@example.com` → `user@example.com`: RFC 3464 §2.3.2 and §2.3.6 fields are `type ";" value`. */
function typedValue(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const semicolon = value.indexOf(";");
  return (semicolon >= 0 ? value.slice(semicolon + 1) : value).trim();
}

/** An address as reported, without angle brackets; canonical when it parses. */
function addressValue(value: string): string {
  const bare = value.trim().replace(/^<(.*)>$/, "$1");
  return parseAddress(bare)?.address ?? bare;
}

/** Message-ID from the header of the returned message or header part. */
async function messageIdOf(original: Attachment | undefined): Promise<string | undefined> {
  if (!original) return undefined;
  // Its header was not bounded by the outer parse: an oversized one names no original.
  const parsed = await simpleParser(headerBlock(original.content), BOUNDED_PARSER_OPTIONS).catch(() => null);
  return parsed?.messageId;
}

/** The header section only (RFC 5322 §2.1): bodies of returned messages can be large. */
function headerBlock(message: Buffer): Buffer {
  const blankLines = [message.indexOf("\r\n\r\n"), message.indexOf("\n\n")].filter((at) => at >= 0);
  return blankLines.length > 0 ? message.subarray(0, Math.min(...blankLines) + 2) : message;
}
