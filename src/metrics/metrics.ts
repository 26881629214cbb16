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
  const registers = [registry];
  const backlogGauges = (queue: string, read: (sources: MetricSources) => Promise<QueueBacklog>) => {
    new Gauge({
      name: `inboxd_${queue}_queue_depth`,
      help: `${queue} deliveries waiting for a try (due or scheduled)`,
      registers,
      async collect() {
        this.set((await read(sources)).depth);
      },
    });
    new Gauge({
      name: `inboxd_${queue}_queue_oldest_age_seconds`,
      help: `age of the oldest ${queue} delivery still waiting (0 when none)`,
      registers,
      async collect() {
        const { oldestCreatedAt } = await read(sources);
        this.set(oldestCreatedAt === null ? 0 : Math.max(0, sources.now() - oldestCreatedAt) / 1000);
      },
    });
  };
  backlogGauges("outbound", (s) => s.outboundBacklog());
  backlogGauges("webhook", (s) => s.webhookBacklog());
  // Inbound mail accepted (250 sent) and not analysed yet.
  backlogGauges("inbound", (s) => s.inboundBacklog());
  new Gauge({
    name: "inboxd_search_index_backlog",
    help: "messages stored and not in the search index yet (indexed in the background; a search indexes them first)",
    registers,
    async collect() {
      this.set(await sources.unindexedMessages());
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
