/**
 * The outbound queue worker, in charge of every delivery row from the moment it is due. Work goes
 * in lanes: a lane serves one destination domain, keeps its SMTP connection open, and sends the
 * messages it claimed for that domain one after the other over it, so that one connection carries
 * many messages. INBOXD_DELIVERY_CONCURRENCY bounds the lanes (connections) in all,
 * INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN those to one domain.
 *
 * Each turn records the outcomes that came back and claims new work in one transaction; a
 * remote's acceptance does not wait for the turn but is committed the moment it comes back, so
 * that a crash makes inboxd send again only what was in flight. Claiming
 * counts the try and moves `next_attempt_at` to when it would be retried, before anything is sent,
 * so a crash never causes a hot retry loop; after a restart the same code picks up what is due.
 */
import type { App } from "../app";
import { commitWithoutWaitingForDisk } from "../store/sqlite/open";
import { rsaSignerName } from "../dkim/sign";
import { createResolver, type Resolver } from "../dns/resolver";
import type { RunningPart } from "../serve";
import type { QueuedDelivery } from "../store/sqlite/deliveries";
import { Destination, prepareJob, transmitJob, type DeliveryContext, type Job, type PreparedJob, type RecipientOutcome } from "./deliver";
import { recordAcceptances, recordOutcomes } from "./outcome";
import { retryDelayMs } from "./policy";
import { relayFromUrl } from "./relay";
import { createSigner, defaultSigningThreads, type Signer } from "./sign-pool";
import { SigningKeys } from "./signing";

export interface OutboundQueue extends RunningPart {
  /** Look for due work now rather than at the next poll (after new deliveries were queued). */
  wake(): void;
  /** Sends everything due now (by the App's clock) and resolves once every outcome is recorded. */
  runDueNow(): Promise<void>;
}

/** How often the database is asked for newly due deliveries. */
const pollIntervalMs = 250;
/**
 * Messages a lane holds claimed ahead, so that it never waits for a turn between two of them: its
 * claims are signed ahead on the signing threads, which a short backlog leaves without work while
 * the lane sends its last ones and waits for the next turn. Measured with bench/outbound: 32 made
 * four times the turns (each a commit) and 10 to 20 % fewer messages a second than 128. Claimed
 * messages that a crash leaves unsent go out when their retry falls due, as any claimed try does.
 */
const laneBacklog = 128;
/**
 * While every lane has work, outcomes are recorded at most this often: one commit (one fsync)
 * then covers several messages. The remote's acceptances do not wait for it (recordAcceptedNow).
 */
const recordEveryMs = 100;

/** A claimed job, already being prepared (signed) while it waits for its lane's connection. */
interface Claimed {
  job: Job;
  prepared: Promise<PreparedJob | Error>;
}

interface Lane {
  destination: Destination;
  backlog: Claimed[];
  running?: Promise<void>;
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

export function startOutboundQueue(app: App, options: { resolver?: Resolver; random?: () => number; signer?: Signer } = {}): OutboundQueue {
  const { config, store, clock, log } = app;
  const random = options.random ?? Math.random;
  const context: DeliveryContext = {
    app,
    resolver: options.resolver ?? createResolver(config.dnsServers),
    signer: options.signer ?? createSigner(log, defaultSigningThreads(), config.dkimRsaEngine),
    keys: new SigningKeys(app),
    relay: config.smtpRelay ? relayFromUrl(config.smtpRelay) : undefined,
    random,
  };
  log.info("DKIM RSA signatures", { by: rsaSignerName(config.dkimRsaEngine) });
  const lanes = new Set<Lane>();
  const inFlight = new Set<string>();
  let finished: Finished[] = [];
  let stopped = false;
  let lookForNewDomains = true;
  let scheduled: "now" | "soon" | undefined;

  /** One turn: record what came back and claim what is due, in one transaction; then start the claims. */
  function turn() {
    scheduled = undefined;
    const batch = finished;
    finished = [];
    const full = lookForNewDomains;
    lookForNewDomains = false;
    try {
      store.transaction(() => {
        for (const { outcomes, finishedAt } of batch) recordOutcomes(app, outcomes, finishedAt, random);
        if (!stopped) claim(full);
      });
    } catch (error) {
      finished = batch.concat(finished);
      lookForNewDomains ||= full;
      throw error;
    }
    for (const { job } of batch) for (const delivery of job.deliveries) inFlight.delete(delivery.id);
    for (const lane of lanes) {
      if (lane.running || lane.backlog.length > 0) {
        runNext(lane);
        continue;
      }
      lane.destination.close();
      lanes.delete(lane);
      lookForNewDomains = true; // its slot is free for another domain
    }
  }

  /** "now" when a lane waits for work; "soon" batches the outcomes of lanes that still have some. */
  function scheduleTurn(when: "now" | "soon") {
    if (stopped || scheduled === "now" || scheduled === when) return;
    scheduled = when;
    const safeTurn = () => {
      if (scheduled !== when) return; // superseded by an earlier turn
      try {
        turn();
      } catch (error) {
        log.error("outbound queue turn failed", { error });
      }
    };
    if (when === "now") setImmediate(safeTurn);
    else setTimeout(safeTurn, recordEveryMs);
  }

  /** Tops up the lanes' backlogs for their domains; with `full`, free slots open lanes to other due domains. */
  function claim(full: boolean) {
    const now = clock.now();
    for (const lane of lanes) {
      const wanted = laneBacklog - lane.backlog.length;
      if (wanted > 0) lane.backlog.push(...claimJobs(lane.destination.domain, now, wanted));
    }
    while (full && lanes.size < config.deliveryConcurrency) {
      const saturated = [...lanesPerDomain()].filter(([, count]) => count >= config.deliveryConcurrencyPerDomain).map(([domain]) => domain);
      const domains = store.deliveries.dueDomains(now, saturated, [...inFlight], config.deliveryConcurrency - lanes.size);
      let opened = 0;
      for (const domain of domains) {
        if (lanes.size >= config.deliveryConcurrency) break;
        const backlog = claimJobs(domain, now, laneBacklog);
        if (backlog.length === 0) continue;
        lanes.add({ destination: new Destination(context, domain), backlog });
        opened++;
      }
      if (opened === 0) break;
    }
  }

  /** Due messages to `domain`, each try counted before it is made, each starting its preparation. */
  function claimJobs(domain: string, now: number, limit: number): Claimed[] {
    return store.deliveries.dueGroups(domain, now, inFlight, limit).map((group) => {
      const deliveries: QueuedDelivery[] = group.map((delivery) => {
        const attempts = delivery.attempts + 1;
        // Should this try never report back (a crash), it is made again when a failed one would be.
        store.deliveries.recordAttempt(delivery.id, now + retryDelayMs(config.deliveryRetryDelays, attempts, () => 0), now);
        inFlight.add(delivery.id);
        return { ...delivery, attempts };
      });
      const job: Job = { messageId: group[0]!.messageId, domain, deliveries };
      log.debug("outbound claimed", { messageId: job.messageId, domain, recipients: deliveries.length, attempt: deliveries[0]!.attempts });
      return { job, prepared: prepareJob(context, job).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))) };
    });
  }

  function lanesPerDomain(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const lane of lanes) counts.set(lane.destination.domain, (counts.get(lane.destination.domain) ?? 0) + 1);
    return counts;
  }

  /** Starts the lane's next claimed message unless it is busy; each finished one starts the next. */
  function runNext(lane: Lane) {
    if (lane.running || stopped) return;
    const claimed = lane.backlog.shift();
    if (!claimed) return;
    const { job } = claimed;
    lane.running = claimed.prepared
      .then((prepared) => {
        if (prepared instanceof Error) throw prepared;
        return transmitJob(context, prepared, lane.destination);
      })
      .catch((error: unknown): RecipientOutcome[] => {
        log.error("outbound delivery failed", { messageId: job.messageId, domain: job.domain, error });
        return job.deliveries.map((delivery) => ({ delivery, kind: "deferred", reply: "inboxd could not make this try (see its log)" }));
      })
      .then((outcomes) => {
        const finishedAt = clock.now();
        recordAcceptedNow(job, outcomes, finishedAt);
        finished.push({ job, outcomes, finishedAt });
        lane.running = undefined;
        runNext(lane);
        scheduleTurn(lane.running ? "soon" : "now");
      });
  }

  /**
   * Commits the remote's acceptances of a try the moment it ends, before the lane's next
   * transaction and before the turn that records the rest: a crash after a 250 then sends
   * again only what was in flight, not what a batch still held. Without waiting for the disk
   * (db/open.ts): a process crash keeps what the WAL was given, and the turn's commit syncs it;
   * only a power loss in between could make a message go out twice, never get lost. Should
   * this commit fail, the turn records them.
   */
  function recordAcceptedNow(job: Job, outcomes: RecipientOutcome[], finishedAt: number) {
    if (!outcomes.some((outcome) => outcome.kind === "delivered")) return;
    try {
      commitWithoutWaitingForDisk(store.sqlite, () => store.transaction(() => recordAcceptances(app, outcomes, finishedAt)));
    } catch (error) {
      log.error("outbound queue: recording accepted deliveries failed; the next turn records them", { messageId: job.messageId, error });
    }
  }

  /** Claimed but never started (the queue stopped): as if never claimed, due as before. */
  function releaseBacklogs() {
    const now = clock.now();
    store.transaction(() => {
      for (const lane of lanes) {
        for (const { job } of lane.backlog.splice(0)) {
          for (const delivery of job.deliveries) {
            store.deliveries.releaseAttempt(delivery.id, delivery.dueAt, now);
            inFlight.delete(delivery.id);
          }
        }
      }
    });
  }

  const busy = () => [...lanes].flatMap((lane) => (lane.running ? [lane.running] : []));

  const timer = setInterval(() => {
    lookForNewDomains = true;
    scheduleTurn("now");
  }, pollIntervalMs);
  scheduleTurn("now");

  const queue: OutboundQueue = {
    name: "outbound",
    wake() {
      lookForNewDomains = true;
      scheduleTurn("now");
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
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      running.delete(app);
      try {
        releaseBacklogs();
      } catch (error) {
        log.error("outbound queue: releasing claimed messages failed", { error });
      }
      await Promise.race([Promise.all(busy()), new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref())]);
      try {
        turn();
      } catch (error) {
        log.error("outbound queue: recording the last outcomes failed", { error });
      }
      for (const lane of lanes) lane.destination.close();
      lanes.clear();
      context.signer.close();
    },
  };
  running.set(app, queue);
  return queue;
}
