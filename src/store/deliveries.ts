/**
 * The outbound queue's side of deliveries (one row per remote recipient of a sent message) and
 * the status of the messages they belong to. Prepared statements rather than the query builder:
 * the worker runs them for every message it sends, several per transaction (outbound/queue.ts).
 */
import type { DeliveryRow } from "./messages";
import type { Db } from "./db";

export type DeliveryStatus = "queued" | "delivered" | "bounced" | "rejected";

/** A delivery as the queue works on it. */
export interface QueuedDelivery {
  id: string;
  organizationId: string;
  messageId: string;
  recipient: string;
  domain: string;
  /** Tries made before this one. */
  attempts: number;
}

/** What the queue needs of a message to send it and to move its status. */
export interface OutboundMessage {
  id: string;
  organizationId: string;
  inboxId: string;
  from: string;
  status: string;
}

export interface DeliveryUpdate {
  id: string;
  status: DeliveryStatus;
  lastResponse: string;
  /** Null once the delivery is final. */
  nextAttemptAt: number | null;
  now: number;
}

export const deliveriesStore = (db: Db) => {
  const sqlite = db.$client;
  // Deliveries in flight are skipped: should a try outlast its lease, it is not claimed twice.
  const dueDomains = sqlite.query<{ domain: string }, [number, string, string, number]>(`
    SELECT domain FROM deliveries
    WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?1
      AND domain NOT IN (SELECT value FROM json_each(?2))
      AND id NOT IN (SELECT value FROM json_each(?3))
    GROUP BY domain ORDER BY min(next_attempt_at) LIMIT ?4`);
  const nextDueMessage = sqlite.query<{ messageId: string }, [string, number, string]>(`
    SELECT message_id AS messageId FROM deliveries
    WHERE domain = ?1 AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?2
      AND id NOT IN (SELECT value FROM json_each(?3))
    ORDER BY next_attempt_at, created_at LIMIT 1`);
  const dueOfMessage = sqlite.query<QueuedDelivery, [string, string, number, string]>(`
    SELECT id, organization_id AS organizationId, message_id AS messageId, recipient, domain, attempts FROM deliveries
    WHERE message_id = ?1 AND domain = ?2 AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?3
      AND id NOT IN (SELECT value FROM json_each(?4))
    ORDER BY id`);
  const recordAttempt = sqlite.query<never, [string, number, number]>("UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = ?2, updated_at = ?3 WHERE id = ?1");
  const update = sqlite.query<never, [string, string, string, number | null, number]>(
    "UPDATE deliveries SET status = ?2, last_response = ?3, next_attempt_at = ?4, updated_at = ?5 WHERE id = ?1",
  );
  const nextDueAt = sqlite.query<{ at: number | null }, []>("SELECT min(next_attempt_at) AS at FROM deliveries WHERE next_attempt_at IS NOT NULL");
  const find = sqlite.query<DeliveryRow, [string]>(`
    SELECT id, organization_id AS organizationId, message_id AS messageId, recipient, domain, status, attempts,
           last_response AS lastResponse, next_attempt_at AS nextAttemptAt, created_at AS createdAt, updated_at AS updatedAt
    FROM deliveries WHERE id = ?1`);
  const statusesOf = sqlite.query<{ status: DeliveryStatus }, [string]>("SELECT status FROM deliveries WHERE message_id = ?1");
  const message = sqlite.query<OutboundMessage, [string]>(
    "SELECT id, organization_id AS organizationId, inbox_id AS inboxId, from_address AS \"from\", status FROM messages WHERE id = ?1",
  );
  const setMessageStatus = sqlite.query<never, [string, string, number]>("UPDATE messages SET status = ?2, updated_at = ?3 WHERE id = ?1");

  return {
    /** Destination domains with deliveries due, the longest-waiting first. */
    dueDomains(now: number, skipDomains: string[], skipIds: string[], limit: number): string[] {
      return dueDomains.all(now, JSON.stringify(skipDomains), JSON.stringify(skipIds), limit).map((row) => row.domain);
    },
    /** The due deliveries of the longest-waiting message to `domain`: what one SMTP transaction carries. */
    nextDueGroup(domain: string, now: number, skipIds: string[]): QueuedDelivery[] {
      const skip = JSON.stringify(skipIds);
      const first = nextDueMessage.get(domain, now, skip);
      return first ? dueOfMessage.all(first.messageId, domain, now, skip) : [];
    },
    /** Counts a try before it is made; `retryAt` is when it is made again should its outcome never be recorded. */
    recordAttempt(id: string, retryAt: number, now: number) {
      recordAttempt.run(id, retryAt, now);
    },
    update(change: DeliveryUpdate) {
      update.run(change.id, change.status, change.lastResponse, change.nextAttemptAt, change.now);
    },
    /** When the next delivery falls due, if any is waiting. */
    nextDueAt(): number | null {
      return nextDueAt.get()?.at ?? null;
    },
    find(id: string): DeliveryRow | undefined {
      return find.get(id) ?? undefined;
    },
    statusesOf(messageId: string): DeliveryStatus[] {
      return statusesOf.all(messageId).map((row) => row.status);
    },
    message(messageId: string): OutboundMessage | undefined {
      return message.get(messageId) ?? undefined;
    },
    setMessageStatus(messageId: string, status: string, now: number) {
      setMessageStatus.run(messageId, status, now);
    },
  };
};
