import { and, eq, like, type Column } from "drizzle-orm";
import { testEventIdPrefix } from "../events/names";

/** A test delivery a newer test takes the place of: failed, kept with its attempts for inspection, as a disabled webhook's are. */
export const supersededDelivery = (now: number) => ({ status: "failed" as const, nextAttemptAt: null, updatedAt: now });

/**
 * A webhook's test deliveries still pending (queueTestEvent supersedes them), for either engine's
 * table. The prefix's `_` match any character in LIKE, harmlessly: other event ids are `evt_` and
 * hexadecimal, which never spells `test`.
 */
export const pendingTestDeliveriesOf = (table: { webhookId: Column; status: Column; eventId: Column }, webhookId: string) =>
  and(eq(table.webhookId, webhookId), eq(table.status, "pending"), like(table.eventId, `${testEventIdPrefix}%`));
