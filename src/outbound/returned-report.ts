/**
 * Bounces (RFC 3464 DSN) and complaints (RFC 5965 ARF) that come back to a return path of ours,
 * long after the remote server accepted the message. They move the message to `bounced` or
 * `complained` with its event and suppress the address; the report itself is never stored as a
 * message, and nothing is ever sent back (no DSN answers a DSN, RFC 3464 §2.2.1 / RFC 5321 §6.1).
 */
import type { App } from "../app";
import { parseReport, type ArfReport, type DsnReport } from "../mail/reports";
import { normalizeMessageId } from "../messages/threading";
import type { DeliveryRow } from "../store/sqlite/messages";
import { moveMessage, settleMessage, suppress } from "./outcome";
import { isHardBounceStatus } from "./policy";

export type ReturnedReportOutcome = "bounced" | "complained" | "ignored";

// RFC 5965 §7.3 feedback types that report unwanted mail; "not-spam" says the opposite and
// "auth-failure" (RFC 6591) is a DMARC failure report, neither is a complaint.
const COMPLAINT_TYPES = new Set(["abuse", "fraud", "virus", "other"]);

/** Matches a report sent to `bounces+<deliveryId>@…` to its delivery and acts on it. */
export async function processReturnedReport(app: App, deliveryId: string, raw: Buffer): Promise<ReturnedReportOutcome> {
  const report = await parseReport(raw).catch(() => null);
  if (!report) return "ignored";
  return app.store.transaction(() => {
    const delivery = app.store.deliveries.find(deliveryId);
    if (!delivery || !isAboutMessageOf(app, delivery, report.originalMessageId)) return "ignored";
    const deliveries = app.store.messages.deliveriesOf([delivery.messageId]);
    return report.kind === "dsn" ? applyDsn(app, delivery, deliveries, report) : applyArf(app, delivery, deliveries, report);
  });
}

/** A report that names another original Message-ID is not about this delivery (forwarded, or forged). */
function isAboutMessageOf(app: App, delivery: DeliveryRow, originalMessageId: string | undefined): boolean {
  if (!originalMessageId) return true;
  const message = app.store.deliveries.message(delivery.messageId);
  const stored = message && app.store.messages.find(message.organizationId, message.inboxId, message.id)?.messageIdHeader;
  return !stored || normalizeMessageId(originalMessageId) === normalizeMessageId(stored);
}

function applyDsn(app: App, returnPath: DeliveryRow, deliveries: DeliveryRow[], report: DsnReport): ReturnedReportOutcome {
  // RFC 3464 §2.3.3: only "failed" is a bounce; "delayed" means the remote still tries.
  const failed = report.recipients.filter((recipient) => recipient.action === "failed");
  if (failed.length === 0) return "ignored";
  const now = app.clock.now();
  for (const entry of failed) {
    // A forwarding system may report an address of its own; the return path still names the delivery.
    const delivery = matching(deliveries, entry.recipient) ?? (failed.length === 1 ? returnPath : undefined);
    if (!delivery || delivery.status === "bounced") continue;
    const reply = `bounce report: ${entry.status}${entry.diagnostic ? ` ${entry.diagnostic}` : ""}`;
    app.store.deliveries.update({ id: delivery.id, status: "bounced", lastResponse: reply, nextAttemptAt: null, now });
    if (isHardBounceStatus(entry.status)) suppress(app, delivery.organizationId, delivery.recipient, "bounced", reply, delivery.messageId, now);
  }
  settleMessage(app, returnPath.messageId, now);
  return "bounced";
}

function applyArf(app: App, returnPath: DeliveryRow, deliveries: DeliveryRow[], report: ArfReport): ReturnedReportOutcome {
  if (!COMPLAINT_TYPES.has(report.feedbackType)) return "ignored";
  const now = app.clock.now();
  // Providers often redact who complained; then it is the recipient the return path names.
  const complainant = (report.originalRecipient && matching(deliveries, report.originalRecipient)) || returnPath;
  suppress(app, complainant.organizationId, complainant.recipient, "complained", `feedback report: ${report.feedbackType}`, complainant.messageId, now);
  moveMessage(app, returnPath.messageId, "complained", now);
  return "complained";
}

function matching(deliveries: DeliveryRow[], address: string): DeliveryRow | undefined {
  const wanted = address.toLowerCase();
  return deliveries.find((delivery) => delivery.recipient.toLowerCase() === wanted);
}
