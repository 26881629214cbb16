/**
 * Webhook endpoints and their attempts log. Endpoints are found by organization, and everything
 * else through an endpoint, so one tenant never reaches another's webhooks or attempts.
 */
import { testEventIdPrefix } from "../../events/names";
import { and, desc, eq, sql } from "drizzle-orm";
import { events, webhookAttempts, webhookDeliveries, webhooks } from "./schema/index";
import type { BlobStore } from "./blobs";
import type { Db } from "./db";
import { payloadReader } from "./event-payload";
import type { SecretBox } from "../secret-box";
import type { WebhookSubscriptions } from "./webhook-subscriptions";
import type { AttemptWithEvent, WebhookChanges } from "../store";
import { pendingTestDeliveriesOf, supersededDelivery } from "../pending-test-deliveries";

export type WebhookRow = typeof webhooks.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;
export type EventRow = typeof events.$inferSelect;

/** `subscriptions` is the fan-out's cache of enabled webhooks: forgotten on every write here. */
export const webhooksStore = (db: Db, secrets: SecretBox, blobs: BlobStore, subscriptions: WebhookSubscriptions) => {
  const opened = <T extends WebhookRow | undefined>(row: T): T => (row ? { ...row, secret: secrets.open(row.secret) } : row);
  // The attempts log shows each attachment without its content: a page of 100 attempts of a message
  // with an 18 MB file was 5 GB of base64, read whole.
  const loggedPayload = payloadReader(db.$client, blobs, { attachmentContents: false });
  const withLoggedPayload = ({ event, ...rest }: AttemptWithEvent): AttemptWithEvent => ({ ...rest, event: { ...event, payload: loggedPayload(event.payload) } });
  const inOrganization = db.$client.query<{ n: number }, { organizationId: string }>("SELECT count(*) AS n FROM webhooks WHERE organization_id = $organizationId");
  const attemptsOf = db.$client.query<{ n: number }, { webhookId: string }>("SELECT count(*) AS n FROM webhook_attempts WHERE webhook_id = $webhookId");
  /** A new delivery of an event, due at `now`: attempts count from 1. */
  const makeDue = (deliveryId: number, now: number) => {
    db.update(webhookDeliveries).set({ nextAttemptAt: now, updatedAt: now }).where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, "pending"))).run();
  };
  const queueDelivery = (webhookId: string, eventId: string, now: number) => {
    const pending = db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(and(eq(webhookDeliveries.eventId, eventId), eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.status, "pending"))).get();
    if (pending) makeDue(pending.id, now);
    else db.insert(webhookDeliveries).values({ webhookId, eventId, status: "pending", attempts: 0, nextAttemptAt: now, createdAt: now, updatedAt: now }).run();
  };
  return {
    queueDelivery,
    insert(row: WebhookRow) {
      db.insert(webhooks).values({ ...row, secret: secrets.seal(row.secret) }).run();
      subscriptions.forget();
    },
    find(organizationId: string, id: string): WebhookRow | undefined {
      return opened(db.select().from(webhooks).where(and(eq(webhooks.organizationId, organizationId), eq(webhooks.id, id))).get());
    },
    list(organizationId: string, page: number, per: number): WebhookRow[] {
      return db.select().from(webhooks).where(eq(webhooks.organizationId, organizationId)).orderBy(desc(webhooks.createdAt), desc(webhooks.id)).limit(per).offset((page - 1) * per).all().map(opened);
    },
    count(organizationId: string): number {
      return inOrganization.get({ organizationId })!.n;
    },
    update(id: string, changes: WebhookChanges, now: number): WebhookRow {
      subscriptions.forget();
      return opened(db.update(webhooks).set({ ...changes, updatedAt: now }).where(eq(webhooks.id, id)).returning().get()!);
    },
    /** Its deliveries and attempts go with it (ON DELETE CASCADE). */
    delete(id: string) {
      db.delete(webhooks).where(eq(webhooks.id, id)).run();
      subscriptions.forget();
    },
    /** Disables a webhook and discards its pending deliveries (failed, kept for inspection); false when it was not enabled. */
    disable(id: string, reason: string, now: number): boolean {
      const changed = db.update(webhooks).set({ enabled: false, disabledReason: reason, updatedAt: now }).where(and(eq(webhooks.id, id), eq(webhooks.enabled, true))).returning({ id: webhooks.id }).all();
      if (changed.length === 0) return false;
      subscriptions.forget();
      // Pending deliveries are those in the due index, which is as small as the backlog.
    db.run(sql`UPDATE webhook_deliveries INDEXED BY webhook_deliveries_due SET status = 'failed', next_attempt_at = NULL, updated_at = ${now} WHERE next_attempt_at IS NOT NULL AND webhook_id = ${id}`);
      return true;
    },
    discardUnsubscribed(id: string, subscribed: string[], now: number) {
      db.run(sql`
        UPDATE webhook_deliveries INDEXED BY webhook_deliveries_due SET status = 'failed', next_attempt_at = NULL, updated_at = ${now}
        WHERE next_attempt_at IS NOT NULL AND webhook_id = ${id} AND substr(event_id, 1, ${testEventIdPrefix.length}) <> ${testEventIdPrefix}
          AND (SELECT type FROM events WHERE events.id = webhook_deliveries.event_id) NOT IN (SELECT value FROM json_each(${JSON.stringify(subscribed)}))`);
    },
    /** An event for one webhook only, due at once: written with its delivery, bypassing the fan-out. */
    queueTestEvent(webhookId: string, event: EventRow) {
      db.update(webhookDeliveries).set(supersededDelivery(event.createdAt)).where(pendingTestDeliveriesOf(webhookDeliveries, webhookId)).run();
      db.insert(events).values(event).run();
      queueDelivery(webhookId, event.id, event.createdAt);
    },
    /** Brings a pending delivery's next try forward to `now`. */
    makeDue,
    findDelivery(id: number): DeliveryRow | undefined {
      return db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)).get();
    },
    /** Newest first; ties (one batch of claims in one millisecond) by insertion order. */
    listAttempts(webhookId: string, page: number, per: number): AttemptWithEvent[] {
      return attemptsWithEvents(db)
        .where(eq(webhookAttempts.webhookId, webhookId))
        .orderBy(desc(webhookAttempts.createdAt), desc(sql`${webhookAttempts}.rowid`))
        .limit(per)
        .offset((page - 1) * per)
        .all()
        .map(withLoggedPayload);
    },
    countAttempts(webhookId: string): number {
      return attemptsOf.get({ webhookId })!.n;
    },
    findAttempt(webhookId: string, attemptId: string): AttemptWithEvent | undefined {
      const found = attemptsWithEvents(db).where(and(eq(webhookAttempts.webhookId, webhookId), eq(webhookAttempts.id, attemptId))).get();
      return found && withLoggedPayload(found);
    },
  };
};

const attemptsWithEvents = (db: Db) =>
  db
    .select({ attempt: webhookAttempts, event: events, nextAttemptAt: webhookDeliveries.nextAttemptAt })
    .from(webhookAttempts)
    .innerJoin(webhookDeliveries, eq(webhookDeliveries.id, webhookAttempts.deliveryId))
    .innerJoin(events, eq(events.id, webhookDeliveries.eventId));
