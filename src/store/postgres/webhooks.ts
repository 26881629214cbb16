/**
 * Webhook endpoints and their attempts log, as ../sqlite/webhooks.ts. Endpoints are found by
 * organization, and everything else through an endpoint, so one tenant never reaches another's
 * webhooks or attempts. The embedded engine keeps each organization's subscriptions in memory for
 * the fan-out of every event (../sqlite/webhook-subscriptions.ts); here several nodes write
 * webhooks, so events.emit reads them in the event's own INSERT … SELECT instead: always current on
 * every node, with no cache to forget.
 */
import { testEventIdPrefix } from "../../events/names";
import { and, desc, eq, sql } from "drizzle-orm";
import type { EventRecord, WebhookDeliveryRecord, WebhookRecord } from "../records";
import type { SecretBox } from "../secret-box";
import type { AttemptWithEvent, WebhookChanges, WebhooksStore } from "../store";
import { pendingTestDeliveriesOf, supersededDelivery } from "../pending-test-deliveries";
import type { PgBlobs } from "./blobs";
import { firstRow, lockKeys, type PgDb } from "./db";
import { payloadReader } from "./event-payload";
import { events, webhookAttempts, webhookDeliveries, webhooks } from "./schema/index";

const deliveryColumns = {
  id: webhookDeliveries.id,
  webhookId: webhookDeliveries.webhookId,
  eventId: webhookDeliveries.eventId,
  status: webhookDeliveries.status,
  attempts: webhookDeliveries.attempts,
  nextAttemptAt: webhookDeliveries.nextAttemptAt,
  createdAt: webhookDeliveries.createdAt,
  updatedAt: webhookDeliveries.updatedAt,
};

const attemptColumns = {
  id: webhookAttempts.id,
  webhookId: webhookAttempts.webhookId,
  deliveryId: webhookAttempts.deliveryId,
  event: webhookAttempts.event,
  url: webhookAttempts.url,
  attemptNumber: webhookAttempts.attemptNumber,
  statusCode: webhookAttempts.statusCode,
  response: webhookAttempts.response,
  success: webhookAttempts.success,
  error: webhookAttempts.error,
  finishedAt: webhookAttempts.finishedAt,
  createdAt: webhookAttempts.createdAt,
};

/**
 * `inTransaction`: find locks the row until the commit (a PATCH, a test event or a retry for a
 * webhook being deleted met it gone: a 500), and count the organization's webhooks (the cap).
 */
export function webhooksStore(db: PgDb, secrets: SecretBox, blobs: PgBlobs, inTransaction: boolean): WebhooksStore {
  const opened = <T extends WebhookRecord | undefined>(row: T): T => (row ? { ...row, secret: secrets.open(row.secret) } : row);
  // The attempts log shows each attachment without its content: a page of 100 attempts of a message
  // with an 18 MB file was 5 GB of base64, read whole.
  const loggedPayload = payloadReader(db, blobs, { attachmentContents: false });
  const withLoggedPayload = async ({ event, ...rest }: AttemptWithEvent): Promise<AttemptWithEvent> => ({ ...rest, event: { ...event, payload: await loggedPayload(event.payload) } });
  const attemptsWithEvents = () =>
    db
      .select({ attempt: attemptColumns, event: events, nextAttemptAt: webhookDeliveries.nextAttemptAt })
      .from(webhookAttempts)
      .innerJoin(webhookDeliveries, eq(webhookDeliveries.id, webhookAttempts.deliveryId))
      .innerJoin(events, eq(events.id, webhookDeliveries.eventId));
  /** A new delivery of an event, due at `now`: attempts count from 1. */
  /**
   * Held by a node too (a try in flight there): no node claims it while the lease holds, and a
   * failure of that try keeps this due time (./webhook-queue.ts, setDelivery).
   */
  const makeDue = async (deliveryId: number, now: number) => {
    await db
      .update(webhookDeliveries)
      .set({ nextAttemptAt: now, updatedAt: now })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, "pending")));
  };
  const queueDelivery = async (webhookId: string, eventId: string, now: number) => {
    const [pending] = await db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(and(eq(webhookDeliveries.eventId, eventId), eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.status, "pending")));
    if (pending) await makeDue(pending.id, now);
    else await db.insert(webhookDeliveries).values({ webhookId, eventId, status: "pending", attempts: 0, nextAttemptAt: now, createdAt: now, updatedAt: now });
  };

  return {
    queueDelivery,
    async insert(row: WebhookRecord): Promise<void> {
      await db.insert(webhooks).values({ ...row, secret: secrets.seal(row.secret) });
    },
    async find(organizationId: string, id: string): Promise<WebhookRecord | undefined> {
      const query = db.select().from(webhooks).where(and(eq(webhooks.organizationId, organizationId), eq(webhooks.id, id)));
      const [row] = inTransaction ? await query.for("no key update") : await query;
      return opened(row);
    },
    async list(organizationId: string, page: number, per: number): Promise<WebhookRecord[]> {
      const rows = await db.select().from(webhooks).where(eq(webhooks.organizationId, organizationId)).orderBy(desc(webhooks.createdAt), desc(webhooks.id)).limit(per).offset((page - 1) * per);
      return rows.map(opened);
    },
    async count(organizationId: string): Promise<number> {
      await lockKeys(db, inTransaction, [`webhooks:${organizationId}`]);
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM webhooks WHERE organization_id = ${organizationId}`))!.n;
    },
    async update(id: string, changes: WebhookChanges, now: number): Promise<WebhookRecord> {
      const [row] = await db.update(webhooks).set({ ...changes, updatedAt: now }).where(eq(webhooks.id, id)).returning();
      return opened(row!);
    },
    /** Its deliveries and attempts go with it (ON DELETE CASCADE). */
    async delete(id: string): Promise<void> {
      await db.delete(webhooks).where(eq(webhooks.id, id));
    },
    async disable(id: string, reason: string, now: number): Promise<boolean> {
      const changed = await db.update(webhooks).set({ enabled: false, disabledReason: reason, updatedAt: now }).where(and(eq(webhooks.id, id), eq(webhooks.enabled, true))).returning({ id: webhooks.id });
      if (changed.length === 0) return false;
      await db.execute(sql`
        UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, claimed_by = NULL, lease_until = NULL, updated_at = ${now}
        WHERE next_attempt_at IS NOT NULL AND webhook_id = ${id}`);
      return true;
    },
    async discardUnsubscribed(id: string, subscribed: string[], now: number): Promise<void> {
      await db.execute(sql`
        UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, claimed_by = NULL, lease_until = NULL, updated_at = ${now}
        WHERE next_attempt_at IS NOT NULL AND webhook_id = ${id} AND NOT starts_with(event_id, ${testEventIdPrefix}::text)
          AND (SELECT type FROM events WHERE events.id = webhook_deliveries.event_id) NOT IN (SELECT jsonb_array_elements_text(${JSON.stringify(subscribed)}::text::jsonb))`);
    },
    async queueTestEvent(webhookId: string, event: EventRecord): Promise<void> {
      await db.update(webhookDeliveries).set(supersededDelivery(event.createdAt)).where(pendingTestDeliveriesOf(webhookDeliveries, webhookId));
      await db.insert(events).values(event);
      await queueDelivery(webhookId, event.id, event.createdAt);
    },
    makeDue,
    async findDelivery(id: number): Promise<WebhookDeliveryRecord | undefined> {
      const [row] = await db.select(deliveryColumns).from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
      return row;
    },
    /** Newest first; ties (one batch of claims in one millisecond) by insertion order. */
    async listAttempts(webhookId: string, page: number, per: number): Promise<AttemptWithEvent[]> {
      const rows = await attemptsWithEvents()
        .where(eq(webhookAttempts.webhookId, webhookId))
        .orderBy(desc(webhookAttempts.createdAt), desc(webhookAttempts.seq))
        .limit(per)
        .offset((page - 1) * per);
      return Promise.all(rows.map(withLoggedPayload));
    },
    async countAttempts(webhookId: string): Promise<number> {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM webhook_attempts WHERE webhook_id = ${webhookId}`))!.n;
    },
    async findAttempt(webhookId: string, attemptId: string): Promise<AttemptWithEvent | undefined> {
      const [found] = await attemptsWithEvents().where(and(eq(webhookAttempts.webhookId, webhookId), eq(webhookAttempts.id, attemptId)));
      return found && withLoggedPayload(found);
    },
  };
}
