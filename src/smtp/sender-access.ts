// The receive allow and block lists (src/access) at the SMTP seam. A sender whose envelope address
// (MAIL FROM) an inbox's block entries match is refused at its RCPT; the rest is decided once the
// data is in, with the From header's addresses as well: an inbox whose rules refuse the sender
// gets no copy, and a message no recipient takes is refused with 550 5.7.1. Either way the refusal
// is in the dialogue, so the sending server reports it and inboxd never sends a bounce.
import addressparser from "nodemailer/lib/addressparser";
import type { App } from "../app";
import { decide, matchingEntry } from "../access/rules";
import { parseAddress, parseInternationalAddress } from "../mail/address";
import type { InboundEnvelope, InboxRecord } from "../store";
import { fieldName, legacyHeaderText, readHeaderBlock } from "./header-fields";
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
  const senders = [...(envelope.mailFrom ? [envelope.mailFrom] : []), ...(await headerFromAddresses(raw))];
  const admitted = envelope.recipients.filter((_, index) => decide(rules[index]!, senders).pass);
  if (admitted.length === 0) throw senderRefused;
  return admitted;
}

type AddressEntry = { address?: string; name?: string; group?: AddressEntry[] };
type AddressDecoder = { decodeAddresses(entries: AddressEntry[]): void };
let storedFormDecoder: AddressDecoder | undefined;

/**
 * mailparser's own decoding of a parsed address field, as the stored `from` gets it: encoded words
 * in names (RFC 2047), and a name that is a whole mailbox in encoded words
 * (`=?utf-8?B?U3BhbW1lciA8c3BhbW1lckBldmlsLnRlc3Q+?=`) read as that mailbox. Its method, not a copy
 * of it: what the rules see stays what the message shows, whatever mailparser's next release does.
 * Made once, with the first message whose recipients have receive rules: mailparser, with the
 * charset tables it brings, is several MB the event loop of a server without rules never holds.
 */
async function decodeAsStored(entries: AddressEntry[]): Promise<AddressEntry[]> {
  storedFormDecoder ??= new (await import("mailparser")).MailParser() as unknown as AddressDecoder;
  storedFormDecoder.decodeAddresses(entries);
  return entries;
}

const mailboxesOf = (entries: AddressEntry[]): string[] => entries.flatMap((entry) => (entry.group ? mailboxesOf(entry.group) : entry.address ? [entry.address] : []));

/**
 * The addresses of the From fields (RFC 5322 §3.6.2), read by the address parser the stored
 * message's `from` comes from (mailparser's), and decoded as it decodes them, so that a mailbox
 * shown as the sender is one the rules saw: comments, quoted names, groups, folds, encoded words
 * and UTF-8 local parts included. The addresses as written are kept too (a domain in A-labels,
 * which the decoding turns into U-labels). What does not parse is left out.
 */
export async function headerFromAddresses(raw: Buffer): Promise<string[]> {
  const addresses = new Set<string>();
  const { fields } = readHeaderBlock(raw);
  // Raw 8-bit text read as the parser reads it: UTF-8 (RFC 6532), else the legacy charset.
  const asText = legacyHeaderText(fields);
  for (const field of fields) {
    if (fieldName(field) !== "from") continue;
    const text = Buffer.from(asText(field), "latin1").toString("utf8");
    const value = text.slice(text.indexOf(":") + 1).replace(/\r\n/g, "");
    const entries = addressparser(value);
    // Read before the decoding, which rewrites the entries in place.
    const written = mailboxesOf(entries);
    for (const address of [...written, ...mailboxesOf(await decodeAsStored(entries))]) {
      const parsed = parseAddress(address) ?? parseInternationalAddress(address);
      if (parsed) addresses.add(parsed.address);
    }
  }
  return [...addresses];
}
