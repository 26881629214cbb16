/**
 * The outbound queue's policy, in charge of every delivery row from the moment it is due; the
 * queue engine (src/queue/engine.ts) runs its turns. Work goes in lanes: a lane serves one
 * destination domain, keeps its SMTP connection open, and sends the messages it claimed for that
 * domain one after the other over it, so that one connection carries many messages.
 * INBOXD_DELIVERY_CONCURRENCY bounds the lanes (connections) in all,
 * INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN those to one domain.
 *
 * Each turn records the outcomes that came back and claims new work in one transaction; a
 * remote's acceptance does not wait for the turn but is committed the moment it comes back, so
 * that a crash makes inboxd send again only what was in flight. Claiming
 * counts the try and moves `next_attempt_at` to when it would be retried, before anything is sent,
 * so a crash never causes a hot retry loop; after a restart the same code picks up what is due.
 */
import type { App } from "../app";
import { rsaSignerName } from "../dkim/sign";
import type { Resolver } from "../dns/resolver";
import { Counts } from "../counts";
import { startQueue, type Claiming } from "../queue/engine";
import type { Queue } from "../queue/running";
import type { QueuedDelivery, Transaction } from "../store";
import { Destination, prepareJob, transmitJob, type DeliveryContext, type Job, type PreparedJob, type RecipientOutcome } from "./deliver";
import { recordAcceptances, recordOutcomes } from "./outcome";
import { retryDelayMs } from "./policy";
import { relayFromUrl } from "./relay";
import { createSigner, defaultSigningThreads, type Signer } from "./sign-pool";
import { SigningKeys } from "./signing";

export type OutboundQueue = Queue;

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
/** Sends wake the queue (app.queues), so a longer sleep only delays what no wake announced. */
const idleMs = 5_000;

/** A claimed job, already being prepared (signed) while it waits for its lane's connection. */
interface Claimed {
  job: Job;
  prepared: Promise<PreparedJob | Error>;
}

interface Lane {
  destination: Destination;
  backlog: Claimed[];
  running?: Promise<Finished>;
  /** The organization whose due mail opened the lane: each may open at most half of them. */
  owner: string;
}

interface Finished {
  job: Job;
  outcomes: RecipientOutcome[];
  finishedAt: number;
}

/** What a turn's transaction claimed, for the lanes once it is committed. */
interface Claims {
  topUps: Map<Lane, Job[]>;
  newLanes: { domain: string; jobs: Job[]; owner: string }[];
}

export function startOutboundQueue(app: App, options: { resolver?: Resolver; random?: () => number; signer?: Signer } = {}): OutboundQueue {
  const { config, store, clock, log } = app;
  const random = options.random ?? Math.random;
  const context: DeliveryContext = {
    app,
    resolver: options.resolver ?? app.resolver,
    signer: options.signer ?? createSigner(log, defaultSigningThreads(), config.dkimRsaEngine),
    keys: new SigningKeys(app),
    relay: config.smtpRelay ? relayFromUrl(config.smtpRelay) : undefined,
    random,
  };
  log.info("DKIM RSA signatures", { by: rsaSignerName(config.dkimRsaEngine) });
  const lanes = new Set<Lane>();
  /** Deliveries claimed whose outcome is not recorded yet. */
  const inFlight = new Set<string>();

  /** Records what came back and claims what is due in one transaction; then hands the claims to the lanes. */
  async function turn(finished: Finished[], now: number, claiming: Claiming) {
    const claims = await store.transaction(async (tx) => {
      await tx.events.holdOrder(finished.flatMap(({ outcomes }) => outcomes.map((outcome) => outcome.delivery.organizationId)));
      for (const { outcomes, finishedAt } of finished) await recordOutcomes(app, tx, outcomes, finishedAt, random);
      return claiming === "none" ? undefined : claim(tx, now, claiming);
    });
    for (const { job } of finished) for (const delivery of job.deliveries) inFlight.delete(delivery.id);
    for (const [lane, jobs] of claims?.topUps ?? []) lane.backlog.push(...jobs.map(startPreparing));
    for (const { domain, jobs, owner } of claims?.newLanes ?? []) lanes.add({ destination: new Destination(context, domain), backlog: jobs.map(startPreparing), owner });
    let closed = false;
    for (const lane of lanes) {
      if (lane.running || lane.backlog.length > 0) continue;
      lane.destination.close();
      lanes.delete(lane);
      closed = true;
    }
    if (closed) queue.wake(); // its slot is free for another domain
  }

  /** Tops up the lanes' backlogs for their domains; with all due, free slots open lanes to other due domains. */
  async function claim(tx: Transaction, now: number, claiming: Claiming): Promise<Claims> {
    const topUps = new Map<Lane, Job[]>();
    for (const lane of lanes) {
      const wanted = laneBacklog - lane.backlog.length;
      if (wanted > 0) topUps.set(lane, await claimJobs(tx, lane.destination.domain, now, wanted));
    }
    return { topUps, newLanes: claiming === "all due" ? await claimNewLanes(tx, now) : [] };
  }

  /**
   * Lanes to other domains with due work, in the free slots, as far as each domain's limit allows,
   * and each organization's: one organization's mail opens at most half the lanes, so that mail
   * to hosts that take minutes to fail (a tarpit that accepts connections and never greets, for
   * RFC 5321 §4.5.3.2's five minutes) cannot hold every slot while other organizations' waits.
   */
  async function claimNewLanes(tx: Transaction, now: number): Promise<Claims["newLanes"]> {
    const newLanes: Claims["newLanes"] = [];
    const lanesPerDomain = new Counts();
    const lanesPerOrganization = new Counts();
    for (const lane of lanes) {
      lanesPerDomain.increment(lane.destination.domain);
      lanesPerOrganization.increment(lane.owner);
    }
    const organizationLimit = Math.max(1, Math.floor(config.deliveryConcurrency / 2));
    const free = () => config.deliveryConcurrency - lanes.size - newLanes.length;
    while (free() > 0) {
      const saturated = lanesPerDomain.atLimit(() => config.deliveryConcurrencyPerDomain);
      const busy = lanesPerOrganization.atLimit(() => organizationLimit);
      const opened = newLanes.length;
      for (const domain of await tx.deliveries.dueDomains(now, saturated, busy, [...inFlight], free())) {
        const jobs = await claimJobs(tx, domain, now, laneBacklog);
        if (jobs.length === 0) continue;
        // The domain was due for an organization not at its limit; other organizations' mail to it rides along.
        const owner = (jobs.find((job) => !busy.includes(organizationOf(job))) ?? jobs[0]!).deliveries[0]!.organizationId;
        newLanes.push({ domain, jobs, owner });
        lanesPerDomain.increment(domain);
        lanesPerOrganization.increment(owner);
        // At its limit now: the next look for due domains passes its mail over.
        if (lanesPerOrganization.get(owner) >= organizationLimit) break;
      }
      if (newLanes.length === opened) break;
    }
    return newLanes;
  }

  const organizationOf = (job: Job) => job.deliveries[0]!.organizationId;

  /** Due messages to `domain`, each try counted before it is made. */
  async function claimJobs(tx: Transaction, domain: string, now: number, limit: number): Promise<Job[]> {
    const jobs: Job[] = [];
    for (const group of await tx.deliveries.dueGroups(domain, now, inFlight, limit)) {
      const deliveries: QueuedDelivery[] = [];
      for (const delivery of group) {
        const attempts = delivery.attempts + 1;
        // Should this try never report back (a crash), it is made again when a failed one would be.
        await tx.deliveries.recordAttempt(delivery.id, now + retryDelayMs(config.deliveryRetryDelays, attempts, () => 0), now);
        deliveries.push({ ...delivery, attempts });
      }
      jobs.push({ messageId: group[0]!.messageId, domain, deliveries });
    }
    return jobs;
  }

  /** A job claimed and committed: in flight from now on, and signed while it waits for its lane. */
  function startPreparing(job: Job): Claimed {
    for (const delivery of job.deliveries) inFlight.add(delivery.id);
    log.debug("outbound claimed", { messageId: job.messageId, domain: job.domain, recipients: job.deliveries.length, attempt: job.deliveries[0]!.attempts });
    return { job, prepared: prepareJob(context, job).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))) };
  }

  /** Each lane that is not busy starts its next claimed message. */
  function startTries(): Promise<Finished>[] {
    const started: Promise<Finished>[] = [];
    for (const lane of lanes) {
      const next = lane.running ? undefined : lane.backlog.shift();
      if (next) started.push((lane.running = send(lane, next)));
    }
    return started;
  }

  function send(lane: Lane, { job, prepared }: Claimed): Promise<Finished> {
    return prepared
      .then((prepared) => {
        if (prepared instanceof Error) throw prepared;
        return transmitJob(context, prepared, lane.destination, () => stillClaimed(job));
      })
      .catch((error: unknown): RecipientOutcome[] => {
        log.error("outbound delivery failed", { messageId: job.messageId, domain: job.domain, error });
        return job.deliveries.map((delivery) => ({ delivery, kind: "deferred", reply: "inboxd could not make this try (see its log)" }));
      })
      .then(async (outcomes) => {
        const finishedAt = clock.now();
        await recordAcceptedNow(job, outcomes, finishedAt);
        lane.running = undefined;
        return { job, outcomes, finishedAt };
      });
  }

  /**
   * Whether the job is still this node's to send: its deliveries were not deleted (with their
   * inbox) nor taken over by another node since its claim. A lane's backlog holds up to
   * laneBacklog messages: they went out after the DELETE's 200, and after another node had taken
   * them over from a node paused or cut off from the database. One being transmitted then still goes.
   */
  async function stillClaimed(job: Job): Promise<boolean> {
    if (await store.deliveries.stillClaimed(job.deliveries.map((delivery) => delivery.id))) return true;
    log.info("outbound delivery withdrawn: deleted, or taken over by another node, before its try", { messageId: job.messageId, domain: job.domain });
    return false;
  }

  /**
   * Commits the remote's acceptances of a try the moment it ends, before the lane's next
   * transaction and before the turn that records the rest: a crash after a 250 then sends
   * again only what was in flight, not what a batch still held. Without waiting for the disk
   * (TransactionOptions.waitForDisk): a process crash keeps what the WAL was given, and the turn's
   * commit syncs it; only a power loss in between could make a message go out twice, never get
   * lost. Should this commit fail, the turn records them.
   */
  async function recordAcceptedNow(job: Job, outcomes: RecipientOutcome[], finishedAt: number) {
    if (!outcomes.some((outcome) => outcome.kind === "delivered")) return;
    try {
      await store.transaction((tx) => recordAcceptances(tx, outcomes, finishedAt), { waitForDisk: false });
    } catch (error) {
      log.error("outbound queue: recording accepted deliveries failed; the next turn records them", { messageId: job.messageId, error });
    }
  }

  /** Claimed but never started (the queue stopped): as if never claimed, due as before. */
  async function releaseBacklogs() {
    const now = clock.now();
    const unsent = [...lanes].flatMap((lane) => lane.backlog.splice(0));
    await store.transaction(async (tx) => {
      for (const { job } of unsent) for (const delivery of job.deliveries) await tx.deliveries.releaseAttempt(delivery.id, delivery.dueAt, now);
    });
    for (const { job } of unsent) for (const delivery of job.deliveries) inFlight.delete(delivery.id);
  }

  const queue = startQueue<Finished>(app, "outbound", {
    batchWindowMs: recordEveryMs,
    idleMs,
    turn,
    startTries,
    // At once when a lane waits for work; otherwise the outcomes of lanes that still have some are batched.
    recordAtOnce: () => [...lanes].some((lane) => !lane.running),
    nextDueAfter: (after) => store.deliveries.nextDueAfter(after),
    release: releaseBacklogs,
    close() {
      for (const lane of lanes) lane.destination.close();
      lanes.clear();
      context.signer.close();
    },
  });
  return queue;
}
