/** The running App: configuration, database, log and clock, shared by every part. */
import { Clock } from "./clock";
import type { Config } from "./config";
import { openDatabase } from "./db/open";
import { migrate } from "./db/migrate";
import { createLogger, type Logger } from "./log";
import { createMetrics, type Metrics } from "./metrics/metrics";
import { createStore, type Store } from "./store";

export interface App {
  config: Config;
  log: Logger;
  clock: Clock;
  store: Store;
  metrics: Metrics;
  close(): void;
}

export function openApp(config: Config, options: { clock?: Clock; log?: Logger; onMigrated?: (versions: string[]) => void } = {}): App {
  const clock = options.clock ?? new Clock();
  const log = options.log ?? createLogger(config.logFormat, config.logLevel);
  const database = openDatabase(config.dataDir);
  try {
    const applied = migrate(database.sqlite, clock.now());
    if (applied.length) log.info("migrations applied", { versions: applied.join(",") });
    options.onMigrated?.(applied);
  } catch (e) {
    database.close();
    throw e;
  }
  // The store reports commit times to the metrics, which read the queues' backlog from the store.
  const store = createStore(database.sqlite, { onCommitted: (seconds) => metrics.commitDuration.observe(seconds) });
  const metrics: Metrics = createMetrics({ outboundBacklog: () => store.deliveries.backlog(), webhookBacklog: () => store.webhookQueue.backlog(), now: () => clock.now() });
  return { config, log, clock, store, metrics, close: () => database.close() };
}
