/**
 * Bounces (RFC 3464 DSN) and complaints (RFC 5965 ARF) that come back to a return path of ours,
 * long after the remote server accepted the message. They move the message to `bounced` or
 * `complained` with its event and suppress the address; the report itself is never stored as a
 * message, and nothing is ever sent back (no DSN answers a DSN, RFC 3464 §2.2.1 / RFC 5321 §6.1).
 */
import type { App } from "../app";
import type { ArfReport, DsnReport } from "../mail/reports";
import { normalizeMessageId } from "../messages/threading";
import { peerText } from "../net/peer-text";
import type { Aggregates, DeliveryRecord, Transaction } from "../store";
import { moveMessage, settleMessage, suppress } from "./outcome";
import { isHardBounceStatus } from "./policy";

export type ReturnedReportOutcome = "bounced" | "complained" | "ignored";

// RFC 5965 §7.3 feedback types that report unwanted mail; "not-spam" says the opposite and
// "auth-failure" (RFC 6591) is a DMARC failure report, neither is a complaint.
const COMPLAINT_TYPES = new Set(["abuse", "fraud", "virus", "other"]);

/**
 * What is read of a report, on the event loop before the reply: the report's own parts come first
 * (RFC 6522 §3: the human-readable part, then the delivery-status or feedback-report, then the
 * original message or its header, of which only the header is read). mailparser takes 0.3-0.4 s
 * over a message of 20 MB (docs/benchmarks.md), and anyone could send one to a return path.
 */
const REPORT_BYTES_READ = 1024 * 1024;

/** A report sent to `bounces+<deliveryId>@…` (one or more of ours), read once and matched to each delivery. */
export async function processReturnedReport(app: App, deliveryIds: string[], raw: Buffer): Promise<ReturnedReportOutcome[]> {
  const { parseReport } = await import("../mail/reports");
  const report = await parseReport(raw.subarray(0, REPORT_BYTES_READ)).catch(() => null);
  const outcomes: ReturnedReportOutcome[] = [];
  for (const deliveryId of deliveryIds) outcomes.push(report ? await applyReport(app, deliveryId, report) : "ignored");
  return outcomes;
}

async function applyReport(app: App, deliveryId: string, report: DsnReport | ArfReport): Promise<ReturnedReportOutcome> {
  return app.store.transaction(async (tx): Promise<ReturnedReportOutcome> => {
    const delivery = await tx.deliveries.find(deliveryId);
    if (!delivery || !(await isAboutMessageOf(tx, delivery, report.originalMessageId))) return "ignored";
    // The recipients the return path's transaction carried, those at its domain: the mail system
    // that reports took no other. Anyone there could write a report naming another recipient of
    // the message, elsewhere, and bounce and suppress that address.
    const deliveries = (await tx.messages.deliveriesOf([delivery.messageId])).filter((other) => other.domain === delivery.domain);
    return report.kind === "dsn" ? applyDsn(app, tx, delivery, deliveries, report) : applyArf(app, tx, delivery, deliveries, report);
  });
}

/** A report that names another original Message-ID is not about this delivery (forwarded, or forged). */
async function isAboutMessageOf(store: Aggregates, delivery: DeliveryRecord, originalMessageId: string | undefined): Promise<boolean> {
  if (!originalMessageId) return true;
  const message = await store.deliveries.message(delivery.messageId);
  const stored = message && (await store.messages.find(message.organizationId, message.inboxId, message.id))?.messageIdHeader;
  return !stored || normalizeMessageId(originalMessageId) === normalizeMessageId(stored);
}

async function applyDsn(app: App, tx: Transaction, returnPath: DeliveryRecord, deliveries: DeliveryRecord[], report: DsnReport): Promise<ReturnedReportOutcome> {
  // RFC 3464 §2.3.3: only "failed" is a bounce; "delayed" means the remote still tries.
  const failed = report.recipients.filter((recipient) => recipient.action === "failed");
  if (failed.length === 0) return "ignored";
  const now = app.clock.now();
  for (const entry of failed) {
    // A forwarding system may report an address of its own; the return path still names the delivery.
    const delivery = matching(deliveries, entry.recipient) ?? (failed.length === 1 ? returnPath : undefined);
    // The first failure stands: a delivery refused before any try (suppressed) was in no transaction.
    if (!delivery || delivery.status === "bounced" || delivery.status === "rejected") continue;
    // The report's Diagnostic-Code is the reporting server's reply, kept as a reply is.
    const reply = peerText(`bounce report: ${entry.status}${entry.diagnostic ? ` ${entry.diagnostic}` : ""}`);
    await tx.deliveries.update({ id: delivery.id, status: "bounced", lastResponse: reply, nextAttemptAt: null, now });
    if (isHardBounceStatus(entry.status) && suppressible(delivery, returnPath)) await suppress(tx, delivery.organizationId, delivery.recipient, "bounced", reply, delivery.messageId, now);
  }
  await settleMessage(tx, returnPath.messageId, now, app.config.deliveryRetryDelays);
  return "bounced";
}

async function applyArf(app: App, tx: Transaction, returnPath: DeliveryRecord, deliveries: DeliveryRecord[], report: ArfReport): Promise<ReturnedReportOutcome> {
  if (!COMPLAINT_TYPES.has(report.feedbackType)) return "ignored";
  const now = app.clock.now();
  // Providers often redact who complained; then it is the recipient the return path names.
  const complainant = (report.originalRecipient && matching(deliveries, report.originalRecipient)) || returnPath;
  if (suppressible(complainant, returnPath)) await suppress(tx, complainant.organizationId, complainant.recipient, "complained", `feedback report: ${report.feedbackType}`, complainant.messageId, now);
  await moveMessage(tx, returnPath.messageId, "complained", now, app.config.deliveryRetryDelays);
  return "complained";
}

/**
 * Whether a report may suppress the address of `delivery`: only the one its return path was made
 * for. The transaction's other recipients got that return path too (every copy's Return-Path names
 * it, RFC 5321 §4.4), so a report naming one of them may come from a co-recipient as well as from
 * their mail system: a colleague in Cc could bounce and suppress everyone at their domain. Such a
 * report still marks that message's delivery bounced; a real bounce suppresses the address the
 * next time a message to it alone bounces.
 */
const suppressible = (delivery: DeliveryRecord, returnPath: DeliveryRecord) => delivery.id === returnPath.id;

function matching(deliveries: DeliveryRecord[], address: string): DeliveryRecord | undefined {
  const wanted = address.toLowerCase();
  return deliveries.find((delivery) => delivery.recipient.toLowerCase() === wanted);
}
