/**
 * The outbound queue worker, in charge of every delivery row from the moment it is due. Work goes
 * in lanes: a lane serves one destination domain, keeps its SMTP connection open, and takes the
 * next due message to that domain as soon as the previous one is answered, so that one connection
 * carries many messages. INBOXD_DELIVERY_CONCURRENCY bounds the lanes (connections) in all,
 * INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN those to one domain.
 *
 * Each turn records the outcomes that came back and claims new work in one transaction. Claiming
 * counts the try and moves `next_attempt_at` to when it would be retried, before anything is sent,
 * so a crash never causes a hot retry loop; after a restart the same code picks up what is due.
 */
import type { App } from "../app";
import { createResolver, type Resolver } from "../dns/resolver";
import type { RunningPart } from "../serve";
import type { QueuedDelivery } from "../store/deliveries";
import { deliverJob, SessionHolder, type DeliveryContext, type Job, type RecipientOutcome } from "./deliver";
import { recordOutcomes } from "./outcome";
import { retryDelayMs } from "./policy";
import { relayFromUrl } from "./relay";

export interface OutboundQueue extends RunningPart {
  /** Look for due work now rather than at the next poll (after new deliveries were queued). */
  wake(): void;
  /** Sends everything due now (by the App's clock) and resolves once every outcome is recorded. */
  runDueNow(): Promise<void>;
}

/** How often the database is asked for newly due deliveries. */
const pollIntervalMs = 250;

interface Lane {
  domain: string;
  sessions: SessionHolder;
  job?: Job;
  done?: Promise<void>;
}

interface Finished {
  job: Job;
  outcomes: RecipientOutcome[];
  finishedAt: number;
}

const running = new WeakMap<App, OutboundQueue>();

/** Wakes the queue of this App, if it runs: for the send path, right after it queued deliveries. */
export function wakeOutboundQueue(app: App) {
  running.get(app)?.wake();
}

export function startOutboundQueue(app: App, options: { resolver?: Resolver; random?: () => number } = {}): OutboundQueue {
  const { config, store, clock, log } = app;
  const random = options.random ?? Math.random;
  const context: DeliveryContext = {
    app,
    resolver: options.resolver ?? createResolver(config.dnsServers),
    relay: config.smtpRelay ? relayFromUrl(config.smtpRelay) : undefined,
    random,
  };
  const lanes = new Set<Lane>();
  const inFlight = new Set<string>();
  let finished: Finished[] = [];
  let stopped = false;
  let turnScheduled = false;
  let lookForNewDomains = true;

  /** One turn: record what came back and claim what is due, in one transaction; then start the claims. */
  function turn() {
    const batch = finished;
    finished = [];
    const full = lookForNewDomains;
    lookForNewDomains = false;
    let claims: { lane: Lane; job: Job }[];
    try {
      claims = store.transaction(() => {
        for (const { outcomes, finishedAt } of batch) recordOutcomes(app, outcomes, finishedAt, random);
        return stopped ? [] : claim(full);
      });
    } catch (error) {
      finished = batch.concat(finished);
      lookForNewDomains ||= full;
      throw error;
    }
    for (const { job } of batch) for (const delivery of job.deliveries) inFlight.delete(delivery.id);
    for (const { lane, job } of claims) start(lane, job);
    for (const lane of lanes) {
      if (lane.job) continue;
      lane.sessions.close();
      lanes.delete(lane);
      lookForNewDomains = true; // its slot is free for another domain
    }
  }

  function scheduleTurn() {
    if (turnScheduled || stopped) return;
    turnScheduled = true;
    setImmediate(() => {
      turnScheduled = false;
      try {
        turn();
      } catch (error) {
        log.error("outbound queue turn failed", { error });
      }
    });
  }

  /** Idle lanes take the next message to their domain; with `full`, free slots open lanes to other due domains. */
  function claim(full: boolean): { lane: Lane; job: Job }[] {
    const now = clock.now();
    const claims: { lane: Lane; job: Job }[] = [];
    for (const lane of lanes) {
      if (lane.job) continue;
      const job = claimJob(lane.domain, now);
      if (job) claims.push({ lane, job });
    }
    while (full && lanes.size < config.deliveryConcurrency) {
      const saturated = [...lanesPerDomain()].filter(([, count]) => count >= config.deliveryConcurrencyPerDomain).map(([domain]) => domain);
      const domains = store.deliveries.dueDomains(now, saturated, [...inFlight], config.deliveryConcurrency - lanes.size);
      let opened = 0;
      for (const domain of domains) {
        if (lanes.size >= config.deliveryConcurrency) break;
        const job = claimJob(domain, now);
        if (!job) continue;
        const lane: Lane = { domain, sessions: new SessionHolder() };
        lanes.add(lane);
        claims.push({ lane, job });
        opened++;
      }
      if (opened === 0) break;
    }
    return claims;
  }

  /** The next due message to `domain`, its try counted before it is made. */
  function claimJob(domain: string, now: number): Job | undefined {
    const due = store.deliveries.nextDueGroup(domain, now, [...inFlight]);
    if (due.length === 0) return undefined;
    const deliveries: QueuedDelivery[] = due.map((delivery) => {
      const attempts = delivery.attempts + 1;
      // Should this try never report back (a crash), it is made again when a failed one would be.
      store.deliveries.recordAttempt(delivery.id, now + retryDelayMs(config.deliveryRetryDelays, attempts, () => 0), now);
      inFlight.add(delivery.id);
      return { ...delivery, attempts };
    });
    return { messageId: due[0]!.messageId, domain, deliveries };
  }

  function lanesPerDomain(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const lane of lanes) counts.set(lane.domain, (counts.get(lane.domain) ?? 0) + 1);
    return counts;
  }

  function start(lane: Lane, job: Job) {
    lane.job = job;
    lane.done = deliverJob(context, job, lane.sessions)
      .catch((error: unknown): RecipientOutcome[] => {
        log.error("outbound delivery failed", { messageId: job.messageId, domain: job.domain, error });
        return job.deliveries.map((delivery) => ({ delivery, kind: "deferred", reply: "inboxd could not make this try (see its log)" }));
      })
      .then((outcomes) => {
        finished.push({ job, outcomes, finishedAt: clock.now() });
        lane.job = undefined;
        scheduleTurn();
      });
  }

  const busy = () => [...lanes].flatMap((lane) => (lane.job && lane.done ? [lane.done] : []));

  const timer = setInterval(() => {
    lookForNewDomains = true;
    scheduleTurn();
  }, pollIntervalMs);
  scheduleTurn();

  const queue: OutboundQueue = {
    name: "outbound",
    wake() {
      lookForNewDomains = true;
      scheduleTurn();
    },
    async runDueNow() {
      for (;;) {
        lookForNewDomains = true;
        turn();
        const pending = busy();
        if (pending.length === 0) return;
        await Promise.race(pending);
      }
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      running.delete(app);
      await Promise.race([Promise.all(busy()), new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref())]);
      try {
        turn();
      } catch (error) {
        log.error("outbound queue: recording the last outcomes failed", { error });
      }
      for (const lane of lanes) lane.sessions.close();
      lanes.clear();
    },
  };
  running.set(app, queue);
  return queue;
}
