/**
 * Recording what happened to deliveries, and what follows for their message (docs/api.md,
 * Messages): `delivered` once every remote recipient accepted it, `bounced` once one failed for
 * good, `rejected` once one could not be tried at all, `complained` on a spam report. Each move
 * emits its event once, in the same transaction. Callers run these inside a transaction, on its `tx`.
 */
import type { App } from "../app";
import type { EventName } from "../events/names";
import { newId } from "../ids";
import { presentMessage } from "../messages/present";
import type { DeliveryStatus, OutboundMessage, Transaction } from "../store";
import type { RecipientOutcome } from "./deliver";
import { isHardBounce, lastTryDueAt, maxTries, retryDelayMs, type SuppressionReason } from "./policy";

export type MessageOutcome = "delivered" | "bounced" | "rejected" | "complained";

// The moves a message may make. A first failure stands (a message that was rejected for one
// recipient does not also bounce), a bounce may follow delivery (a DSN that comes later), and a
// spam complaint is the last word. No status is reached twice, so no event is emitted twice.
const NEXT: Record<string, MessageOutcome[]> = {
  sent: ["delivered", "bounced", "rejected", "complained"],
  delivered: ["bounced", "complained"],
  bounced: ["complained"],
  rejected: ["complained"],
};

const EVENT: Record<MessageOutcome, EventName> = {
  delivered: "message.delivered",
  bounced: "message.bounced",
  rejected: "message.rejected",
  complained: "message.complained",
};

/**
 * The remote servers' acceptances (2yz after the data) among the outcomes of one try. Until they
 * are committed a crash makes inboxd send those messages again, so the queue commits them on their
 * own as soon as the try ends, before anything else; recordOutcomes records them again (a no-op)
 * with the rest. Between the two they are due: after a crash there they come back to be recorded.
 */
export async function recordAcceptances(tx: Transaction, outcomes: RecipientOutcome[], finishedAt: number) {
  for (const { delivery, kind, reply } of outcomes) if (kind === "delivered") await tx.deliveries.markAccepted(delivery.id, reply, finishedAt);
}

/** Records each recipient's outcome of one try, then moves the messages concerned. */
export async function recordOutcomes(app: App, tx: Transaction, outcomes: RecipientOutcome[], finishedAt: number, random: () => number = Math.random) {
  const delays = app.config.deliveryRetryDelays;
  const messages = new Set<string>();
  await recordAcceptances(tx, outcomes, finishedAt);
  for (const outcome of outcomes) {
    const { delivery, kind, reply, refusedAtRcpt } = outcome;
    messages.add(delivery.messageId);
    if (kind === "delivered") {
      await tx.deliveries.finishAccepted(delivery.id, finishedAt);
      logAttempt(app, outcome, "delivered");
      continue;
    }
    if (kind === "deferred") {
      // RFC 5321 §4.5.4.1: give up after the schedule's last try, as a failure for good.
      if (delivery.attempts >= maxTries(delays)) {
        await setDelivery(tx, delivery.id, "bounced", `retries exhausted after ${delivery.attempts} tries; last: ${reply}`, null, finishedAt);
        logAttempt(app, outcome, "bounced", { gaveUp: "retries exhausted" });
      } else {
        const nextAttemptAt = finishedAt + retryDelayMs(delays, delivery.attempts, random);
        await setDelivery(tx, delivery.id, "queued", reply, nextAttemptAt, finishedAt);
        // The delivery's expiresAt as the API shows it.
        const giveUpAt = lastTryDueAt(delays, delivery.attempts, nextAttemptAt)!;
        logAttempt(app, outcome, "deferred", { nextAttemptAt: new Date(nextAttemptAt).toISOString(), giveUpAfter: new Date(giveUpAt).toISOString() });
      }
      continue;
    }
    // Rejected: it could not be tried (docs/outbound-delivery.md), so the try its claim counted was none.
    await setDelivery(tx, delivery.id, kind, reply, null, finishedAt, kind === "rejected" ? delivery.attempts - 1 : undefined);
    logAttempt(app, outcome, kind);
    if (kind === "bounced" && refusedAtRcpt && isHardBounce(reply)) await suppress(tx, delivery.organizationId, delivery.recipient, "bounced", reply, delivery.messageId, finishedAt);
  }
  for (const messageId of messages) await settleMessage(tx, messageId, finishedAt, delays);
}

/** One line per recipient and try: the domain (not the address), the host, the reply and what follows. */
function logAttempt(app: App, { delivery, reply, host }: RecipientOutcome, outcome: "delivered" | "deferred" | "bounced" | "rejected", next: Record<string, string> = {}) {
  app.metrics.deliveryAttempts.inc({ outcome });
  const log = outcome === "delivered" ? app.log.info : app.log.warn;
  log("delivery attempt", { messageId: delivery.messageId, domain: delivery.domain, attempt: delivery.attempts, mx: host ?? null, outcome, reply: withoutAddresses(reply), ...next });
}

/**
 * The reply as logged: remote servers name the recipient in it (Postfix: `<ada@example.com>:
 * Recipient address rejected`), and the log keeps a recipient's domain, never the address. The
 * API's `lastResponse` keeps the reply whole. A local part (quoted or not) is read to 64
 * characters at most (RFC 5321 §4.5.3.1.1), so that a long reply without an address is scanned
 * in linear time.
 */
const withoutAddresses = (reply: string) => reply.replace(/(?:"(?:[^"\\\r\n]|\\.){0,64}"|[^\s<>"(),;:[\]@]{1,64})@([A-Za-z0-9.-]+)/g, "***@$1");

function setDelivery(tx: Transaction, id: string, status: DeliveryStatus, lastResponse: string, nextAttemptAt: number | null, now: number, attempts?: number) {
  return tx.deliveries.update({ id, status, lastResponse, nextAttemptAt, now, attempts });
}

/** The message status its deliveries call for now, if it may move there. */
/** `retryDelays`: INBOXD_DELIVERY_RETRY_DELAYS, for the `expiresAt` of the deliveries its event shows (presentDelivery). */
export async function settleMessage(tx: Transaction, messageId: string, now: number, retryDelays: readonly number[]) {
  const statuses = await tx.deliveries.statusesOf(messageId);
  const target: MessageOutcome | undefined = statuses.includes("bounced")
    ? "bounced"
    : statuses.includes("rejected")
      ? "rejected"
      : statuses.length > 0 && statuses.every((status) => status === "delivered")
        ? "delivered"
        : undefined;
  if (target) await moveMessage(tx, messageId, target, now, retryDelays);
}

/** Moves the message and emits the event, when the move is allowed; false otherwise. */
export async function moveMessage(tx: Transaction, messageId: string, target: MessageOutcome, now: number, retryDelays: readonly number[]): Promise<boolean> {
  const message = await tx.deliveries.message(messageId);
  if (!message || !NEXT[message.status]?.includes(target)) return false;
  await tx.deliveries.setMessageStatus(messageId, target, now);
  await tx.events.emit(
    { organizationId: message.organizationId, type: EVENT[target], inboxId: message.inboxId, messageId, payload: await presented(tx, message, retryDelays) },
    now,
  );
  return true;
}

export function suppress(tx: Transaction, organizationId: string, address: string, reason: SuppressionReason, detail: string, messageId: string, now: number) {
  return tx.suppressions.upsert({ id: newId("sup"), organizationId, address, reason, detail, messageId, createdAt: now, updatedAt: now });
}

async function presented(tx: Transaction, message: OutboundMessage, retryDelays: readonly number[]) {
  const { message: row, attachments, deliveries } = (await tx.deliveries.messageWithParts(message.id))!;
  return presentMessage(row, attachments, deliveries, retryDelays);
}
