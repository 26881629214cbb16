/**
 * The background re-verification of custom domains: pending ones every few minutes for a day,
 * then every domain hourly, so a domain whose records vanish turns failed without anyone asking.
 * Due times live in the database and come from the App's clock; a short poll finds what is due.
 */
import type { App } from "../app";
import { runEvery, type RunningPart, type Stopping } from "../running-part";
import { nextCheckAt } from "./status";
import { verifyDomainRecords } from "./verification";

const POLL_INTERVAL_MS = 1000;
const BATCH_SIZE = 20;
const CONCURRENT_CHECKS = 4;

export function startDomainChecks(app: App): RunningPart {
  /** Claims due domains (moving their next check on first, so a crash mid-check never loops) and checks them. */
  async function checkDue(stopping: Stopping) {
    while (!stopping()) {
      const now = app.clock.now();
      const due = await app.store.transaction(async (tx) => {
        const rows = await tx.domains.due(now, BATCH_SIZE);
        for (const row of rows) await tx.domains.update(row.id, { nextCheckAt: nextCheckAt(row.status, row.recordsChangedAt, now) });
        return rows;
      });
      if (due.length === 0) return;
      for (let i = 0; i < due.length; i += CONCURRENT_CHECKS) {
        await Promise.all(
          due.slice(i, i + CONCURRENT_CHECKS).map((row) =>
            verifyDomainRecords(app, row).catch((error) => app.log.error("domain check failed", { domain: row.name, error })),
          ),
        );
      }
    }
  }

  // Look-ups end within the resolver's timeouts; a check cut short by a stop is due again after a restart.
  return runEvery("domain-checks", POLL_INTERVAL_MS, checkDue, { log: app.log, event: "domain checks failed" }, { stopWaitMs: () => app.shutdown.remainingMs() });
}
