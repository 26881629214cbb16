/**
 * The webhook queue's claims and tries, as ../sqlite/webhook-queue.ts, for several nodes at once:
 * due deliveries are read with FOR UPDATE SKIP LOCKED in the turn's transaction and held by a
 * lease (./leases.ts) from the claim until the outcome is recorded.
 *
 * Deleting a webhook locks its row FOR UPDATE and then, by cascade, its deliveries and attempts;
 * so every statement here that writes a delivery or an attempt holds its webhook first (FOR KEY
 * SHARE, which the inserts' foreign-key checks take anyway). Taken in the other order, a delete
 * and a turn each wait for the other, and PostgreSQL aborts one of them as a deadlock.
 */
import { sql } from "drizzle-orm";
import { testEventIdPrefix } from "../../events/names";
import { unfinishedAttemptError } from "../../webhooks/policy";
import type { SecretBox } from "../secret-box";
import type { AttemptOutcome, ClaimedAttempt, DueSkipped, DueWebhookDelivery, QueueBacklog, WebhookQueueStore } from "../store";
import type { PgBlobs } from "./blobs";
import { firstRow, rowsOf, type PgDb } from "./db";
import { payloadReader } from "./event-payload";
import { unheld, type Leases } from "./leases";
import { numbersOf, textsOf } from "./lists";

export function webhookQueueStore(db: PgDb, secrets: SecretBox, blobs: PgBlobs, leases: Leases): WebhookQueueStore {
  const wholePayload = payloadReader(db, blobs);
  // A delivery ended while its try was under way (its webhook disabled, a newer test in its place)
  // stays ended (../sqlite/webhook-queue.ts); its claim goes either way.
  // With the try's attempt: a delivery re-driven while that try was under way (changed since its
  // attempt was made) keeps the re-drive's due time when the try fails, as on SQLite.
  const setDelivery = (deliveryId: number, status: string, nextAttemptAt: number | null, now: number, attemptId: string | null = null) =>
    db.execute(sql`
      UPDATE webhook_deliveries SET status = CASE status WHEN 'pending' THEN ${status} ELSE status END,
        next_attempt_at = CASE WHEN status <> 'pending' THEN next_attempt_at
          WHEN ${nextAttemptAt}::bigint IS NOT NULL AND updated_at > (SELECT created_at FROM webhook_attempts WHERE id = ${attemptId}::text) THEN least(${nextAttemptAt}::bigint, next_attempt_at)
          ELSE ${nextAttemptAt}::bigint END,
        claimed_by = NULL, lease_until = NULL, updated_at = ${now} WHERE id = ${deliveryId}`);
  /** Held until the transaction ends; a webhook being deleted is waited for, and then its rows are gone. */
  const holdWebhooksOf = (deliveryIds: number[]) =>
    db.execute(sql`
      SELECT 1 FROM webhooks WHERE id IN (SELECT webhook_id FROM webhook_deliveries WHERE id IN ${numbersOf(deliveryIds)})
      ORDER BY id FOR KEY SHARE`);

  return {
    async backlog(): Promise<QueueBacklog> {
      return (await firstRow<QueueBacklog>(db, sql`SELECT count(*)::int AS depth, min(created_at)::float8 AS "oldestCreatedAt" FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL`))!;
    },
    async nextDueAfter(after: number): Promise<number | undefined> {
      const row = await firstRow<{ dueAt: number | null }>(db, sql`SELECT min(next_attempt_at)::float8 AS "dueAt" FROM webhook_deliveries WHERE next_attempt_at > ${after}`);
      return row?.dueAt ?? undefined;
    },
    /**
     * Ordered by due time, then creation order, as on SQLite. Each delivery's webhook is held and
     * then the delivery locked as it is read (the event row is not): another node claiming at the
     * same moment passes it over, and so does this one a webhook being deleted. PostgreSQL locks a
     * row's tables in the order of these clauses, and keeps a lock taken before a later one is
     * skipped: the other way round, a delivery of a webhook being deleted stayed locked by the
     * turn, whose next statements waited for the webhook while the delete's cascade waited for
     * the delivery (a deadlock, ended with a 503).
     * A delivery whose earlier claim was never finished (`claimed_by` set: its node died, and its
     * lease ran out) has that try closed here, as a restart closes them on SQLite. A delivery of a
     * disabled webhook (a test event aside: those reach it still) is discarded here: its event's
     * fan-out, on another connection, may have read the webhook enabled while its disabling committed.
     */
    async due(now: number, skip: DueSkipped, limit: number): Promise<DueWebhookDelivery[]> {
      const rows = await rowsOf<DueWebhookDelivery & { abandoned: boolean; enabled: boolean }>(db, sql`
        SELECT d.id::float8 AS "deliveryId", w.organization_id AS "organizationId", d.next_attempt_at::float8 AS "dueAt", d.attempts, d.webhook_id AS "webhookId", w.url, w.secret,
               e.id AS "eventId", e.type, e.created_at::float8 AS "eventCreatedAt", e.inbox_id AS "inboxId", e.message_id AS "messageId", e.payload,
               d.claimed_by IS NOT NULL AS abandoned, w.enabled
        FROM webhook_deliveries d
        JOIN webhooks w ON w.id = d.webhook_id
        JOIN events e ON e.id = d.event_id
        WHERE d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= ${now} AND ${unheld(now, "d")}
          AND w.url NOT IN ${textsOf(skip.urls)}
          AND d.id NOT IN ${numbersOf(skip.deliveryIds)}
          AND w.organization_id NOT IN ${textsOf(skip.organizationIds)}
        ORDER BY d.next_attempt_at, d.id
        LIMIT ${limit}
        FOR KEY SHARE OF w SKIP LOCKED
        FOR UPDATE OF d SKIP LOCKED`);
      const abandoned = rows.filter((row) => row.abandoned).map((row) => row.deliveryId);
      if (abandoned.length > 0) await closeUnfinished(db, sql`delivery_id IN ${numbersOf(abandoned)}`, now);
      const discarded = rows.filter((row) => !row.enabled && !row.eventId.startsWith(testEventIdPrefix));
      for (const row of discarded) await setDelivery(row.deliveryId, "failed", null, now);
      // One event's deliveries share its whole payload, as on SQLite.
      const whole = new Map<string, Promise<string>>();
      const wholeOnce = (stored: string) => whole.get(stored) ?? whole.set(stored, wholePayload(stored)).get(stored)!;
      return Promise.all(
        rows.filter((row) => !discarded.includes(row)).map(async ({ abandoned: _abandoned, enabled: _enabled, ...row }) => ({ ...row, secret: secrets.open(row.secret), payload: await wholeOnce(row.payload) })),
      );
    },
    async recordAttempts(attempts: ClaimedAttempt[]): Promise<void> {
      const until = leases.until();
      for (const a of attempts) {
        await db.execute(sql`
          INSERT INTO webhook_attempts (id, webhook_id, delivery_id, event, url, attempt_number, success, created_at)
          VALUES (${a.id}, ${a.webhookId}, ${a.deliveryId}, ${a.event}, ${a.url}, ${a.attemptNumber}, false, ${a.createdAt})`);
        await db.execute(sql`
          UPDATE webhook_deliveries SET attempts = ${a.attemptNumber}, next_attempt_at = ${a.retryAt}, claimed_by = ${leases.holder}, lease_until = ${until}, updated_at = ${a.createdAt}
          WHERE id = ${a.deliveryId}`);
      }
    },
    async releaseAttempts(attempts: ClaimedAttempt[]): Promise<void> {
      if (attempts.length === 0) return;
      await holdWebhooksOf(attempts.map((a) => a.deliveryId));
      for (const a of attempts) {
        await db.execute(sql`DELETE FROM webhook_attempts WHERE id = ${a.id}`);
        await db.execute(sql`
          UPDATE webhook_deliveries SET attempts = ${a.attemptNumber - 1}, updated_at = ${a.createdAt}, claimed_by = NULL, lease_until = NULL,
            next_attempt_at = CASE WHEN status = 'pending' THEN ${a.dueAt}::bigint ELSE next_attempt_at END
          WHERE id = ${a.deliveryId}`);
      }
    },
    async staleClaims(claims: Pick<ClaimedAttempt, "id" | "deliveryId" | "url">[]): Promise<Set<number>> {
      if (claims.length === 0) return new Set();
      const given = JSON.stringify(claims.map((c) => [c.deliveryId, c.url, c.id]));
      const rows = await rowsOf<{ id: number }>(db, sql`
        SELECT (given.value ->> 0)::float8 AS id FROM jsonb_array_elements(${given}::text::jsonb) AS given(value)
        WHERE NOT EXISTS (
          SELECT 1 FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN webhooks w ON w.id = d.webhook_id
          WHERE a.id = given.value ->> 2 AND d.status = 'pending' AND w.url = given.value ->> 1)`);
      return new Set(rows.map((row) => row.id));
    },
    async recordOutcomes(outcomes: AttemptOutcome[]): Promise<void> {
      if (outcomes.length === 0) return;
      await holdWebhooksOf(outcomes.map((o) => o.deliveryId));
      for (const o of outcomes) {
        await db.execute(sql`
          UPDATE webhook_attempts SET status_code = ${o.statusCode}, response = ${o.response}, success = ${o.success}, error = ${o.error}, finished_at = ${o.finishedAt}
          WHERE id = ${o.attemptId}`);
        await setDelivery(o.deliveryId, o.deliveryStatus, o.nextAttemptAt, o.finishedAt, o.attemptId);
      }
    },
    async discard(deliveryId: number, now: number): Promise<void> {
      await setDelivery(deliveryId, "failed", null, now);
    },
    async endFailureRun(webhookId: string): Promise<void> {
      await db.execute(sql`UPDATE webhooks SET first_failure_at = NULL WHERE id = ${webhookId} AND first_failure_at IS NOT NULL`);
    },
    async extendFailureRun(webhookId: string, at: number): Promise<number | undefined> {
      const row = await firstRow<{ firstFailureAt: number }>(db, sql`
        UPDATE webhooks SET first_failure_at = coalesce(first_failure_at, ${at}) WHERE id = ${webhookId} RETURNING first_failure_at::float8 AS "firstFailureAt"`);
      return row?.firstFailureAt;
    },
    async isEnabled(webhookId: string): Promise<boolean> {
      return (await firstRow<{ enabled: boolean }>(db, sql`SELECT enabled FROM webhooks WHERE id = ${webhookId}`))?.enabled === true;
    },
    /**
     * At start: only the tries no node holds (this node's earlier runs, freed as the store opened,
     * and nodes whose leases ran out); other nodes' tries in flight are theirs to finish.
     */
    async closeUnfinishedAttempts(now: number, error: string): Promise<void> {
      await closeUnfinished(db, sql`delivery_id IN (SELECT id FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL AND ${unheld(now)})`, now, error);
    },
  };
}

/** Tries whose outcome never came back, among the attempts `which` selects. */
function closeUnfinished(db: PgDb, which: ReturnType<typeof sql>, now: number, error = unfinishedAttemptError) {
  return db.execute(sql`UPDATE webhook_attempts SET error = ${error}, finished_at = ${now} WHERE finished_at IS NULL AND ${which}`);
}
