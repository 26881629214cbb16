// The receive allow and block lists (src/access) at the SMTP seam. A sender whose envelope address
// (MAIL FROM) an inbox's block entries match is refused at its RCPT; the rest is decided once the
// data is in, with the From header's addresses as well: an inbox whose rules refuse the sender
// gets no copy, and a message no recipient takes is refused with 550 5.7.1. Either way the refusal
// is in the dialogue, so the sending server reports it and inboxd never sends a bounce.
import addressparser from "nodemailer/lib/addressparser";
import type { App } from "../app";
import { decide, matchingEntry } from "../access/rules";
import { parseAddress } from "../mail/address";
import type { InboundEnvelope, InboxRecord } from "../store";
import { fieldName, readHeaderBlock } from "./header-fields";
import { SmtpReply } from "./replies";

/** RFC 3463 5.7.1: delivery not authorized. Which entry refused it is the recipient's business, not the sender's. */
export const senderRefused = new SmtpReply(550, "5.7.1", "The recipient does not accept mail from this sender");

/** At RCPT: throws the refusal when a receive block entry of the inbox matches the envelope sender ("" for the null reverse-path). */
export async function refuseBlockedEnvelopeSender(app: App, inbox: InboxRecord, mailFrom: string): Promise<void> {
  if (!mailFrom) return;
  const entries = await app.store.accessRules.applying(inbox.organizationId, inbox.id, "receive");
  if (matchingEntry(entries, "block", [mailFrom])) throw senderRefused;
}

/**
 * After the data: the recipient inboxes whose receive rules take the sender, known by its envelope
 * address and its From header's. Throws the refusal when there were some and none does.
 */
export async function admittedRecipients(app: App, envelope: InboundEnvelope, raw: Buffer): Promise<InboundEnvelope["recipients"]> {
  if (envelope.recipients.length === 0) return envelope.recipients;
  const rules = await Promise.all(envelope.recipients.map((recipient) => app.store.accessRules.applying(recipient.organizationId, recipient.inboxId, "receive")));
  // Most inboxes have no receive rules: their mail is not read for its From field at all.
  if (rules.every((entries) => entries.length === 0)) return envelope.recipients;
  const senders = [...(envelope.mailFrom ? [envelope.mailFrom] : []), ...headerFromAddresses(raw)];
  const admitted = envelope.recipients.filter((_, index) => decide(rules[index]!, senders).pass);
  if (admitted.length === 0) throw senderRefused;
  return admitted;
}

/**
 * The addresses of the From fields (RFC 5322 §3.6.2), read by the address parser the stored
 * message's `from` comes from (mailparser's), so that a mailbox shown as the sender is one the
 * rules saw: comments, quoted names, groups and folds included. What does not parse is left out.
 */
export function headerFromAddresses(raw: Buffer): string[] {
  const addresses: string[] = [];
  for (const field of readHeaderBlock(raw).fields) {
    if (fieldName(field) !== "from") continue;
    for (const { address } of addressparser(field.slice(field.indexOf(":") + 1).replace(/\r\n/g, ""), { flatten: true })) {
      const parsed = parseAddress(address);
      if (parsed) addresses.push(parsed.address);
    }
  }
  return addresses;
}
