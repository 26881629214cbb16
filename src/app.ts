/** The running App: configuration, database, log and clock, shared by every part. */
import { Revocations } from "./auth/revocations";
import { Clock } from "./clock";
import type { Config } from "./config";
import { EventStreams } from "./events/stream";
import { exitOnceWritten } from "./exit";
import { downloads, type Downloads } from "./http/download";
import { configuredResolver, type Resolver } from "./dns/resolver";
import { createLogger, type Logger } from "./log";
import { inFlightBudget, type InFlightBudget } from "./memory/in-flight";
import { createMetrics, type Metrics } from "./metrics/metrics";
import { RunningQueues } from "./queue/running";
import { openStore, type Store } from "./store/index";
import { ShutdownDeadline } from "./shutdown";

export interface App {
  config: Config;
  log: Logger;
  clock: Clock;
  store: Store;
  metrics: Metrics;
  /** The DNS resolver of every part (INBOXD_DNS_SERVERS); analysis threads build theirs alike (configuredResolver). */
  resolver: Resolver;
  /** Message bytes in flight across SMTP and HTTP (INBOXD_MESSAGE_MEMORY_MB). */
  messageMemory: InFlightBudget;
  /** The queues this process runs, for the code that queues their work to wake them. */
  queues: RunningQueues;
  /** The open GET /v1/events streams, woken when events are committed. */
  eventStreams: EventStreams;
  /** Credentials revoked by this process, so that a request authorised before they were looks again. */
  revocations: Revocations;
  /** Large downloads and JSON answers under way, at most a few per organization (src/http/download.ts). */
  largeResponses: Downloads;
  /** What is left of the shutdown's wait for in-flight work, shared by the parts as they stop. */
  shutdown: ShutdownDeadline;
  close(): void;
}

/**
 * `stopOnFailedSync`, for the server: when commits the embedded engine made could not be synced
 * to disk, the process stops (exit 1, restarted by its service manager) and the next start
 * recovers what the disk holds, rather than tell anyone that what they saw committed failed.
 */
export async function openApp(config: Config, options: { clock?: Clock; log?: Logger; onMigrated?: (versions: string[]) => void; stopOnFailedSync?: boolean } = {}): Promise<App> {
  const clock = options.clock ?? new Clock();
  const log = options.log ?? createLogger(config.logFormat, config.logLevel);
  const queues = new RunningQueues();
  // The store reports commit times to the metrics, which read the queues' backlog from the store,
  // and wakes the webhook queue and the event streams when events were recorded (by any node).
  const store = await openStore(config, {
    clock,
    log,
    onMigrated: options.onMigrated,
    onSyncFailed: options.stopOnFailedSync ? stopOnce((error) => log.error("the database's commits could not be synced to disk: stopping; the next start recovers what the disk holds", { error })) : undefined,
    onCommitted: (seconds) => metrics.commitDuration.observe(seconds),
    onEventsCommitted: () => {
      queues.wake("webhooks");
      eventStreams.wake();
    },
    // On a database several nodes share: work or events another node committed.
    onWake: (what) => (what === "events" ? eventStreams.wake() : queues.wake(what)),
  });
  const eventStreams = new EventStreams(store, clock, log, config);
  const revocations = new Revocations(log);
  revocations.onApiKeyRevoked((organizationId) => eventStreams.keyRevoked(organizationId));
  // One for every listener (HTTP, HTTPS, and each HTTPS app a new certificate makes): an
  // organization's places are counted together, whichever listener serves them.
  const largeResponses = downloads(revocations);
  const messageMemory = inFlightBudget(config.messageMemoryMb * 1024 * 1024);
  const metrics: Metrics = createMetrics({ outboundBacklog: () => store.deliveries.backlog(), webhookBacklog: () => store.webhookQueue.backlog(), inboundBacklog: () => store.acceptedInbound.backlog(), unindexedMessages: () => store.messageSearch.unindexed(), messageBytesInFlight: () => messageMemory.inUse(), now: () => clock.now() });
  return { config, log, clock, store, metrics, resolver: configuredResolver(config), messageMemory, queues, eventStreams, revocations, largeResponses, shutdown: new ShutdownDeadline(config.shutdownTimeoutMs), close: () => store.close() };
}

/** Tells `why` and exits with 1, the first time only: each sync that fails after it calls again. */
function stopOnce(why: (error: unknown) => void): (error: unknown) => void {
  let stopping = false;
  return (error) => {
    if (stopping) return;
    stopping = true;
    why(error);
    exitOnceWritten(1);
  };
}
