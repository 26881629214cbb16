/**
 * The webhook queue's hot path: claiming due deliveries and recording tries. Prepared statements
 * rather than the query builder, because the worker runs them for every delivery, many per
 * transaction (webhooks/queue.ts batches them).
 */
import type { BlobStore } from "./blobs";
import type { Db } from "./db";
import { payloadReader } from "./event-payload";
import type { AttemptOutcome, ClaimedAttempt, DueSkipped, DueWebhookDelivery, QueueBacklog } from "../store";
import type { SecretBox } from "../secret-box";

export const webhookQueueStore = (db: Db, secrets: SecretBox, blobs: BlobStore) => {
  const sqlite = db.$client;
  const wholePayload = payloadReader(db.$client, blobs);
  // Ordered by due time, then creation order: events to one webhook that are due together go in
  // the order they happened. Deliveries to URLs and of organizations already at their claim
  // limit are skipped so that they cannot hold the head of the queue, and so are those in flight.
  const due = sqlite.query<DueWebhookDelivery, [number, string, string, string, number]>(`
    SELECT d.id AS deliveryId, w.organization_id AS organizationId, d.next_attempt_at AS dueAt, d.attempts AS attempts, d.webhook_id AS webhookId, w.url AS url, w.secret AS secret,
           e.id AS eventId, e.type AS type, e.created_at AS eventCreatedAt, e.inbox_id AS inboxId, e.message_id AS messageId, e.payload AS payload
    FROM webhook_deliveries d
    JOIN webhooks w ON w.id = d.webhook_id
    JOIN events e ON e.id = d.event_id
    WHERE d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= ?1
      AND w.url NOT IN (SELECT value FROM json_each(?2))
      AND d.id NOT IN (SELECT value FROM json_each(?3))
      AND w.organization_id NOT IN (SELECT value FROM json_each(?4))
    ORDER BY d.next_attempt_at, d.id
    LIMIT ?5`);
  // One statement per row, all in the caller's transaction: measured faster than one statement
  // over a JSON array of the batch.
  const insertAttempt = sqlite.query<never, [string, string, number, string, string, number, number]>(
    "INSERT INTO webhook_attempts (id, webhook_id, delivery_id, event, url, attempt_number, success, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)",
  );
  const bumpDelivery = sqlite.query<never, [number, number, number, number]>("UPDATE webhook_deliveries SET attempts = ?2, next_attempt_at = ?3, updated_at = ?4 WHERE id = ?1");
  const finishAttempt = sqlite.query<never, [string, number | null, string | null, number, string | null, number]>(
    "UPDATE webhook_attempts SET status_code = ?2, response = ?3, success = ?4, error = ?5, finished_at = ?6 WHERE id = ?1",
  );
  // A delivery ended while its try was under way (its webhook disabled, a newer test in its place)
  // stays ended: the try's outcome does not make it pending again. A delivery's id is SQLite's
  // rowid, which a new row takes again once the highest ones are deleted (a webhook deleted with
  // tries under way): so a try's outcome, or its release, reaches its delivery only while the
  // try's attempt row (deleted with the delivery, its id never reused) still names it. Before, a
  // deleted webhook's try marked another webhook's new delivery succeeded, unsent.
  const ofItsAttempt = "EXISTS (SELECT 1 FROM webhook_attempts WHERE id = ?5 AND delivery_id = ?1)";
  // A delivery re-driven while its try was under way (changed since the try's attempt was made)
  // keeps the re-drive's due time when the try fails: its retry delay took the re-drive's place.
  const setDelivery = sqlite.query<never, [number, string, number | null, number, string]>(
    `UPDATE webhook_deliveries SET status = CASE status WHEN 'pending' THEN ?2 ELSE status END,
       next_attempt_at = CASE WHEN status <> 'pending' THEN next_attempt_at
         WHEN ?3 IS NOT NULL AND updated_at > (SELECT created_at FROM webhook_attempts WHERE id = ?5) THEN min(?3, next_attempt_at)
         ELSE ?3 END,
       updated_at = ?4 WHERE id = ?1 AND ${ofItsAttempt}`,
  );
  const discardDelivery = sqlite.query<never, [number, number]>("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = ?2 WHERE id = ?1 AND status = 'pending'");
  const dropAttempt = sqlite.query<never, [string]>("DELETE FROM webhook_attempts WHERE id = ?1");
  const unbumpDelivery = sqlite.query<never, [number, number, number, number, string]>(`
    UPDATE webhook_deliveries SET attempts = ?2, updated_at = ?3, next_attempt_at = CASE WHEN status = 'pending' THEN ?4 ELSE next_attempt_at END
    WHERE id = ?1 AND ${ofItsAttempt}`);
  const staleClaims = sqlite.query<{ id: number }, [string]>(`
    SELECT given.value ->> 0 AS id FROM json_each(?1) AS given
    WHERE NOT EXISTS (
      SELECT 1 FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN webhooks w ON w.id = d.webhook_id
      WHERE a.id = given.value ->> 2 AND d.status = 'pending' AND w.url = given.value ->> 1)`);
  const endFailureRun = sqlite.query<never, [string]>("UPDATE webhooks SET first_failure_at = NULL WHERE id = ?1 AND first_failure_at IS NOT NULL");
  const extendFailureRun = sqlite.query<{ firstFailureAt: number }, [string, number]>(
    "UPDATE webhooks SET first_failure_at = coalesce(first_failure_at, ?2) WHERE id = ?1 RETURNING first_failure_at AS firstFailureAt",
  );
  const backlog = sqlite.query<QueueBacklog, []>("SELECT count(*) AS depth, min(created_at) AS oldestCreatedAt FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL");
  const nextDueAfter = sqlite.query<{ dueAt: number | null }, [number]>("SELECT min(next_attempt_at) AS dueAt FROM webhook_deliveries WHERE next_attempt_at > ?1");
  const isEnabled = sqlite.query<{ enabled: number }, [string]>("SELECT enabled FROM webhooks WHERE id = ?1");
  // A try without an outcome belongs to a delivery that is still pending: found through the small due index.
  const closeUnfinished = sqlite.query<never, [number, string]>(`
    UPDATE webhook_attempts SET error = ?2, finished_at = ?1
    WHERE finished_at IS NULL AND delivery_id IN (SELECT id FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL)`);

  return {
    /** Webhook deliveries still to be tried, and when the oldest was queued. */
    backlog: (): QueueBacklog => backlog.get()!,
    nextDueAfter: (after: number): number | undefined => nextDueAfter.get(after)!.dueAt ?? undefined,
    due(now: number, skip: DueSkipped, limit: number): DueWebhookDelivery[] {
      const rows = due.all(now, JSON.stringify(skip.urls), JSON.stringify(skip.deliveryIds), JSON.stringify(skip.organizationIds), limit);
      // One event's deliveries share its whole payload: rebuilt per row, a message's attachments
      // were held once per webhook (64 webhooks and a 17 MiB attachment: 4 GB).
      const whole = new Map<string, string>();
      for (const row of rows) {
        row.secret = secrets.open(row.secret);
        const stored = row.payload;
        row.payload = whole.get(stored) ?? wholePayload(stored);
        whole.set(stored, row.payload);
      }
      return rows;
    },
    /** Written before the requests go out, so a crash mid-try cannot cause a hot retry loop. */
    recordAttempts(attempts: ClaimedAttempt[]) {
      for (const a of attempts) {
        insertAttempt.run(a.id, a.webhookId, a.deliveryId, a.event, a.url, a.attemptNumber, a.createdAt);
        bumpDelivery.run(a.deliveryId, a.attemptNumber, a.retryAt, a.createdAt);
      }
    },
    /**
     * Undoes claims that were never sent: no attempt row, and a pending delivery is due again as
     * before, in its place among those due at the same time (order per webhook holds).
     */
    releaseAttempts(attempts: ClaimedAttempt[]) {
      for (const a of attempts) {
        unbumpDelivery.run(a.deliveryId, a.attemptNumber - 1, a.createdAt, a.dueAt, a.id);
        dropAttempt.run(a.id);
      }
    },
    staleClaims(claims: Pick<ClaimedAttempt, "id" | "deliveryId" | "url">[]): Set<number> {
      return claims.length === 0 ? new Set() : new Set(staleClaims.all(JSON.stringify(claims.map((c) => [c.deliveryId, c.url, c.id]))).map((r) => r.id));
    },
    recordOutcomes(outcomes: AttemptOutcome[]) {
      for (const o of outcomes) {
        finishAttempt.run(o.attemptId, o.statusCode, o.response, o.success ? 1 : 0, o.error, o.finishedAt);
        setDelivery.run(o.deliveryId, o.deliveryStatus, o.nextAttemptAt, o.finishedAt, o.attemptId);
      }
    },
    /** A delivery whose tries are used up: it stays, marked failed. */
    discard(deliveryId: number, now: number) {
      discardDelivery.run(deliveryId, now);
    },
    endFailureRun(webhookId: string) {
      endFailureRun.run(webhookId);
    },
    /** Starts the run of failures at `at` unless one is on; its start, or undefined for a deleted webhook. */
    extendFailureRun(webhookId: string, at: number): number | undefined {
      return extendFailureRun.get(webhookId, at)?.firstFailureAt;
    },
    isEnabled(webhookId: string): boolean {
      return isEnabled.get(webhookId)?.enabled === 1;
    },
    /** After a crash or a shutdown that could not wait: tries whose outcome never came back. */
    closeUnfinishedAttempts(now: number, error: string) {
      closeUnfinished.run(now, error);
    },
  };
};
