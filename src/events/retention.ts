/**
 * Event retention: events older than INBOXD_EVENT_RETENTION_DAYS are deleted in the background, so
 * that the table the event stream resumes from stays as large as the period. An event whose
 * webhook deliveries are still pending stays until they finish. The App's clock decides what is
 * old and when the next purge is due; a short real-time tick looks at that clock.
 */
import { takeTurn } from "../event-loop";
import type { App } from "../app";
import { runEvery, type RunningPart, type Stopping } from "../running-part";

const TICK_MS = 1000;
/** Purges are due this often by the App's clock. */
const PURGE_INTERVAL_MS = 60 * 60 * 1000;
/** Events deleted per statement: each is a short write, so sends and receipts wait little behind a large purge. */
const PURGE_BATCH = 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export function startEventRetention(app: App): RunningPart {
  let nextPurgeAt = app.clock.now();

  async function purge(stopping: Stopping) {
    const now = app.clock.now();
    if (now < nextPurgeAt) return;
    nextPurgeAt = now + PURGE_INTERVAL_MS;
    const before = now - app.config.eventRetentionDays * DAY_MS;
    let purged = 0;
    let batch: number;
    do {
      // A turn of the event loop between batches: the embedded engine's statements run on it, and
      // 40 batches back to back held every request 150-340 ms.
      await takeTurn();
      batch = await app.store.events.purge(before, PURGE_BATCH);
      purged += batch;
    } while (batch === PURGE_BATCH && !stopping());
    if (purged) app.log.info("old events purged", { events: purged, retentionDays: app.config.eventRetentionDays });
  }

  return runEvery("event-retention", TICK_MS, purge, { log: app.log, event: "event purge failed" });
}
