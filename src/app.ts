/** The running App: configuration, database, log and clock, shared by every part. */
import { resolve } from "node:path";
import { Clock } from "./clock";
import type { Config } from "./config";
import { openDatabase, QUICK_CHECK_WAIT_MS } from "./store/sqlite/open";
import { migrate } from "./store/sqlite/migrate";
import { openSecrets } from "./store/sqlite/secret-key";
import { createLogger, type Logger } from "./log";
import { inFlightBudget, type InFlightBudget } from "./memory/in-flight";
import { createMetrics, type Metrics } from "./metrics/metrics";
import { createStore, type Store } from "./store/sqlite/index";

export interface App {
  config: Config;
  log: Logger;
  clock: Clock;
  store: Store;
  metrics: Metrics;
  /** Message bytes in flight across SMTP and HTTP (INBOXD_MESSAGE_MEMORY_MB). */
  messageMemory: InFlightBudget;
  close(): void;
}

export function openApp(config: Config, options: { clock?: Clock; log?: Logger; onMigrated?: (versions: string[]) => void } = {}): App {
  const clock = options.clock ?? new Clock();
  const log = options.log ?? createLogger(config.logFormat, config.logLevel);
  const database = openDatabase(config.dataDir, { cacheMb: config.dbCacheMb });
  let secrets: ReturnType<typeof openSecrets>;
  try {
    const applied = migrate(database.sqlite, clock.now());
    if (applied.length) log.info("migrations applied", { versions: applied.join(",") });
    options.onMigrated?.(applied);
    secrets = openSecrets(config, database.sqlite, clock.now());
    if (secrets.sealedNow) log.info("secrets stored in the clear are now sealed", { count: secrets.sealedNow });
  } catch (e) {
    database.close();
    throw e;
  }
  if (database.unfinishedCheck) {
    const path = resolve(config.dataDir, "inboxd.db");
    log.warn("the database check (PRAGMA quick_check) did not finish in time: started without it; it goes on, and its outcome follows", { database: path, waitedMs: QUICK_CHECK_WAIT_MS });
    void database.unfinishedCheck.then((finding) => {
      if (finding === "ok") log.info("the database check finished: no damage", { database: path });
      else log.error("the database check found damage: stop inboxd and restore the last backup (inboxd restore FILE --force)", { database: path, finding });
    });
  }
  // The store reports commit times to the metrics, which read the queues' backlog from the store.
  const store = createStore(database.sqlite, { secrets: secrets.box, onCommitted: (seconds) => metrics.commitDuration.observe(seconds) });
  // Chunks a crash left behind before their message was stored (store/blobs.ts).
  const orphans = store.blobs.removeOrphans();
  if (orphans) log.info("removed unfinished message blobs", { blobs: orphans });
  const messageMemory = inFlightBudget(config.messageMemoryMb * 1024 * 1024);
  const metrics: Metrics = createMetrics({ outboundBacklog: () => store.deliveries.backlog(), webhookBacklog: () => store.webhookQueue.backlog(), messageBytesInFlight: () => messageMemory.inUse(), now: () => clock.now() });
  return { config, log, clock, store, metrics, messageMemory, close: () => database.close() };
}
