/**
 * Prometheus metrics (text exposition format 0.0.4) through prom-client, the registry every
 * Node exporter uses: its default process metrics (memory, CPU, file descriptors, event-loop
 * lag) work under Bun, and its histograms and label handling are well tested. One registry per
 * App, so that several servers in one test process count apart.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { QueueBacklog } from "../store";

/** What the gauges read at each scrape: the persisted queues' backlog, the message memory in use, and the time now. */
export type MetricSources = {
  outboundBacklog: () => Promise<QueueBacklog>;
  webhookBacklog: () => Promise<QueueBacklog>;
  inboundBacklog: () => Promise<QueueBacklog>;
  unindexedMessages: () => Promise<number>;
  messageBytesInFlight: () => number;
  now: () => number;
};

const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(sources: MetricSources) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "inboxd_" });
  // V8's heap spaces, which JavaScriptCore does not have: Bun makes them up by walking the whole
  // heap, 40-55 ms of the event loop at every scrape. The heap's total and used sizes stay.
  for (const kind of ["total", "used", "available"]) registry.removeSingleMetric(`inboxd_nodejs_heap_space_size_${kind}_bytes`);
  // What Bun does not report at all: the active handles, requests and resources read 0 with every
  // socket open, and the collections' histogram never gets a sample. Left out, not shown as 0.
  for (const kind of ["handles", "requests", "resources"]) for (const suffix of ["", "_total"]) registry.removeSingleMetric(`inboxd_nodejs_active_${kind}${suffix}`);
  registry.removeSingleMetric("inboxd_nodejs_gc_duration_seconds");
  const registers = [registry];
  // Read once per scrape (scrape() below), shared by the gauges that show them.
  let scraped: Promise<StoreReadings> = Promise.resolve({ up: false });
  const readings = () => scraped;
  const backlogGauges = (queue: string, read: (readings: StoreReadings) => QueueBacklog | undefined) => {
    new Gauge({
      name: `inboxd_${queue}_queue_depth`,
      help: `${queue} deliveries waiting for a try (due or scheduled); NaN while the database does not answer`,
      registers,
      async collect() {
        this.set(read(await readings())?.depth ?? NaN);
      },
    });
    new Gauge({
      name: `inboxd_${queue}_queue_oldest_age_seconds`,
      help: `age of the oldest ${queue} delivery still waiting (0 when none); NaN while the database does not answer`,
      registers,
      async collect() {
        const backlog = read(await readings());
        this.set(!backlog ? NaN : backlog.oldestCreatedAt === null ? 0 : Math.max(0, sources.now() - backlog.oldestCreatedAt) / 1000);
      },
    });
  };
  backlogGauges("outbound", (r) => r.outbound);
  backlogGauges("webhook", (r) => r.webhook);
  // Inbound mail accepted (250 sent) and not analysed yet.
  backlogGauges("inbound", (r) => r.inbound);
  new Gauge({
    name: "inboxd_search_index_backlog",
    help: "messages stored and not in the search index yet (indexed in the background; a search indexes them first); NaN while the database does not answer",
    registers,
    async collect() {
      this.set((await readings()).unindexed ?? NaN);
    },
  });
  new Gauge({
    name: "inboxd_database_up",
    help: "1 when the database answered this scrape's reads within 2 s, else 0 (PostgreSQL out of reach, the embedded engine's storage failing)",
    registers,
    async collect() {
      this.set((await readings()).up ? 1 : 0);
    },
  });
  new Gauge({
    name: "inboxd_message_bytes_in_flight",
    help: "message bytes being received, analysed and stored now, against INBOXD_MESSAGE_MEMORY_MB",
    registers,
    collect() {
      this.set(sources.messageBytesInFlight());
    },
  });

  return {
    registry,
    /** The exposition text of every metric, the store's readings taken once for it. */
    scrape(): Promise<string> {
      scraped = storeReadings(sources);
      return registry.metrics();
    },
    httpRequests: new Counter({ name: "inboxd_http_requests_total", help: "HTTP requests answered, by route pattern and status", labelNames: ["method", "route", "status"] as const, registers }),
    httpDuration: new Histogram({ name: "inboxd_http_request_duration_seconds", help: "time to answer an HTTP request", labelNames: ["method", "route"] as const, buckets: LATENCY_BUCKETS, registers }),
    smtpConnections: new Counter({ name: "inboxd_smtp_connections_total", help: "inbound SMTP connections accepted", registers }),
    /** Messages and requests told to try later because the message memory was spent. */
    memoryDeferrals: new Counter({ name: "inboxd_memory_deferrals_total", help: "SMTP messages (452) and HTTP requests (503) told to try later because INBOXD_MESSAGE_MEMORY_MB was spent", labelNames: ["protocol"] as const, registers }),
    smtpMessages: new Counter({ name: "inboxd_smtp_messages_total", help: "inbound messages by outcome (accepted, or the reply code that refused them)", labelNames: ["outcome"] as const, registers }),
    deliveryAttempts: new Counter({ name: "inboxd_delivery_attempts_total", help: "outbound delivery outcomes per recipient: delivered, deferred, bounced, rejected", labelNames: ["outcome"] as const, registers }),
    webhookAttempts: new Counter({ name: "inboxd_webhook_attempts_total", help: "webhook tries by outcome: succeeded, retry, failed", labelNames: ["outcome"] as const, registers }),
    commitDuration: new Histogram({ name: "inboxd_commit_duration_seconds", help: "time from a batched write's queueing to its commit being on disk", buckets: LATENCY_BUCKETS, registers }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** What a scrape reads from the store: a reading the store did not give in time is absent. */
interface StoreReadings {
  outbound?: QueueBacklog;
  webhook?: QueueBacklog;
  inbound?: QueueBacklog;
  unindexed?: number;
  up: boolean;
}

/** How long a scrape waits for the store's readings: a database that does not answer must not take the process's own metrics with it. */
const STORE_READINGS_MS = 2_000;

/**
 * The store's readings for one scrape, each given up on after STORE_READINGS_MS. Before, one
 * failed read failed the whole scrape: while the database was out of reach, /metrics answered
 * 503, and the counters that showed the outage (the 451s, the 503s) were lost with it.
 */
async function storeReadings(sources: MetricSources): Promise<StoreReadings> {
  const inTime = <T>(read: () => Promise<T>): Promise<T | undefined> =>
    Promise.race([read().catch(() => undefined), new Promise<undefined>((resolve) => setTimeout(resolve, STORE_READINGS_MS).unref())]);
  const [outbound, webhook, inbound, unindexed] = await Promise.all([inTime(sources.outboundBacklog), inTime(sources.webhookBacklog), inTime(sources.inboundBacklog), inTime(sources.unindexedMessages)]);
  return { outbound, webhook, inbound, unindexed, up: [outbound, webhook, inbound, unindexed].every((reading) => reading !== undefined) };
}
