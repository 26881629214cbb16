// Storing an analysed inbound message: one copy per recipient inbox, each with our Return-Path,
// Authentication-Results and Received fields above the message as received. The one path for mail
// analysed after its 250 (./inbound-queue) and before it (INBOXD_DMARC_ENFORCE, ./receive).
import type { App } from "../app";
import { alreadyReceived, prepareContent, storeReceivedMessage, type PreparedContent } from "../messages/receive";
import type { InboundEnvelope, Transaction } from "../store";
import type { Analysis } from "./analyze";
import type { SmtpIdentity } from "./authenticate";
import { receivedField, returnPathField } from "./trace";

/** Who sent the message, as its authentication (SPF, and DMARC through it) sees them. */
export const identityOf = ({ clientIp, helo, mailFrom }: InboundEnvelope): SmtpIdentity => ({ clientIp, helo, mailFrom });

/**
 * The copies' sources and the attachments, written ahead of the transaction that stores them
 * (messages/receive). Each source is the copy's trace fields, then the message as received: after
 * the inbound queue's analysis, the accepted message's blob (`accepted`), which the copies name
 * rather than write again, unless the analysis took forged fields out of it.
 */
export function prepareCopies(app: App, envelope: InboundEnvelope, analysis: Analysis, accepted?: { blobId: string | null; size: number }): Promise<PreparedContent> {
  const shared = accepted?.blobId && analysis.raw.byteLength === accepted.size ? accepted.blobId : null;
  return prepareContent(
    app,
    envelope.recipients.map(({ address }) => {
      const trace = traceFields(app, envelope, analysis, address);
      return shared ? { bytes: trace, blobId: shared } : [trace, analysis.raw];
    }),
    analysis.parsed.attachments,
  );
}

/** One stored copy, for the log once its commit is on disk. */
export interface StoredCopy {
  messageId: string;
  inboxId: string;
}

/**
 * Stores a copy for each recipient inbox that still exists and does not hold the message yet (a
 * sender whose 250 was lost sends it again: messages/receive alreadyReceived), in `tx`.
 */
export async function storeCopies(app: App, tx: Transaction, envelope: InboundEnvelope, analysis: Analysis, prepared: PreparedContent): Promise<StoredCopy[]> {
  const stored: StoredCopy[] = [];
  for (const [i, recipient] of envelope.recipients.entries()) {
    const inbox = await tx.inboxes.find(recipient.organizationId, recipient.inboxId);
    if (!inbox) {
      app.log.info("inbound copy dropped: its inbox was deleted after the message was accepted", { transaction: envelope.transaction, inboxId: recipient.inboxId });
      continue;
    }
    if (await alreadyReceived(tx, inbox.id, analysis.parsed, analysis.receivedDigest)) {
      app.log.info("inbound copy not stored again: the inbox holds this message, sent again after a lost reply", { transaction: envelope.transaction, inboxId: inbox.id, messageIdHeader: analysis.parsed.messageId });
      continue;
    }
    const { attachmentBlobIds } = prepared;
    const message = await storeReceivedMessage(app, tx, { inbox, parsed: analysis.parsed, raw: prepared.sources[i]!, attachmentBlobIds, authentication: analysis.authentication, receivedDigest: analysis.receivedDigest });
    stored.push({ messageId: message.id, inboxId: inbox.id });
  }
  return stored;
}

/** One log line per stored copy, once committed. */
export function logCopies(app: App, envelope: InboundEnvelope, analysis: Analysis, stored: StoredCopy[]): void {
  const { spf, dkim, dmarc } = analysis.authentication;
  for (const { messageId, inboxId } of stored) app.log.info("message received", { messageId, inboxId, transaction: envelope.transaction, size: analysis.raw.length, spf, dkim, dmarc });
}

/** What one copy's stored source has before the message, as a final delivery: our Return-Path, Authentication-Results and Received. */
function traceFields(app: App, envelope: InboundEnvelope, analysis: Analysis, recipient: string): Buffer {
  const received = receivedField({
    helo: envelope.helo,
    clientIp: envelope.clientIp,
    hostname: app.config.hostname,
    protocol: envelope.protocol,
    tls: envelope.tls,
    id: envelope.transaction,
    recipient,
    time: new Date(envelope.receivedAt),
  });
  return Buffer.from(returnPathField(envelope.mailFrom) + analysis.field + received);
}
