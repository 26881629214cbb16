/**
 * The webhook queue's policy, in charge of every delivery row from the moment it is due; the
 * queue engine (src/queue/engine.ts) runs its turns. A turn writes in one transaction the
 * outcomes that came back and the claims it makes: for each due delivery, its attempt row, its
 * attempts count and the time of its next try should this one never report back. The claimed
 * deliveries are sent only once that transaction is on disk, with bounded concurrency overall and
 * per URL. The transaction goes through the store's group commit, whose fsync runs off the event
 * loop: tries in flight go on while a turn's commit reaches the disk. A turn claims up to
 * `claimAhead` rounds of requests (per URL, only for URLs that answer promptly: url-load.ts), so
 * that one commit serves many deliveries and a free slot never waits for a commit. The same code
 * path runs after a restart: what is due goes out at once.
 */
import type { App } from "../app";
import type { Config } from "../config";
import { randomToken } from "../ids";
import { Counts } from "../counts";
import { startQueue, type Claiming } from "../queue/engine";
import type { Queue } from "../queue/running";
import type { ClaimedAttempt, DueWebhookDelivery, Transaction } from "../store";
import { createDeliverer } from "./deliver";
import { envelopeBody } from "./envelope";
import { recordOutcomes, type Finished } from "./outcomes";
import { isGone, maxAttempts, retryDelayMs, unfinishedAttemptError, type TryResult } from "./policy";
import type { Lookup } from "./ssrf";
import { ClaimDepth } from "./url-load";

export type WebhookQueue = Queue;

/** Claims made ahead, in rounds of the concurrency limits (overall, and per URL that answers promptly). */
const claimAhead = 16;
/** A try that takes this long, or longer, makes its URL slow (url-load.ts: ClaimDepth). */
const promptTryMs = 1000;
/** Longest wait before outcomes that came back are written, so that they share a commit. */
const batchWindowMs = 50;
/**
 * Longest sleep with nothing due. A commit that recorded events wakes the queue (the App wires the
 * store to it); a turn is also what finds a try in flight that has made its URL slow, which takes
 * promptTryMs to show.
 */
const idleMs = promptTryMs;

interface Claim {
  attempt: ClaimedAttempt;
  due: DueWebhookDelivery;
}

/** What a turn's transaction changed, which the queue's memory follows once it is on disk. */
interface TurnChanges {
  /** Claims not sent yet that the turn gave back (their attempt rows deleted). */
  givenBack: Set<number>;
  /** New claims, recorded: sent once the commit is on disk. */
  claims: Claim[];
}

export function startWebhookQueue(app: App, options: { lookup?: Lookup } = {}): WebhookQueue {
  const { config, store, clock, log } = app;
  const deliver = createDeliverer({
    lookup: options.lookup ?? app.resolver.lookupHostAddresses,
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
    now: () => clock.now(),
  });
  const attemptsAllowed = maxAttempts(config.webhookRetryDelays);
  // An organization sends on at most half the slots: one whose receivers never answer (a webhook
  // per slot, each try waiting out its timeout) leaves the others the rest.
  const limits = { sending: config.webhookConcurrency, sendingPerUrl: config.webhookConcurrencyPerUrl, sendingPerOrganization: Math.ceil(config.webhookConcurrency / 2) };
  const claimLimit = limits.sending * claimAhead;
  /**
   * An organization holds at most half the claims, as it sends on half the slots: claims go
   * oldest first, and one organization's backlog of thousands of deliveries to receivers that
   * answer slowly (or promptly) took every claim, so another's new delivery waited until that
   * whole backlog had gone out.
   */
  const organizationClaimShare = claimLimit / 2;
  const claimDepth = new ClaimDepth(limits.sendingPerUrl, claimAhead, promptTryMs);
  const claimLimitOf = (url: string) => claimDepth.limit(url);

  /** Claimed deliveries whose outcome is not recorded yet: being committed, waiting, sending, or back. */
  const claimed = new Set<number>();
  const claimedPerUrl = new Counts();
  const claimedPerOrganization = new Counts();
  /** Claimed and on disk, waiting for a sending slot, in claim order. */
  let waiting: Claim[] = [];
  /** Waiting claims that the turn in progress gives back: not to be sent. */
  const withheld = new Set<number>();
  /** Claims of the turn in progress, on their way to disk. */
  let committing = 0;
  /** The URL of each try in flight, by delivery, and when it started. */
  const sending = new Map<number, { url: string; startedAt: number }>();
  const sendingPerUrl = new Counts();
  const sendingPerOrganization = new Counts();
  /**
   * The bodies of the events being sent, each made once and shared by its deliveries in flight:
   * a message event carries its attachments, which a body per delivery held once per webhook.
   */
  const bodies = new Map<string, { body: string; sends: number }>();
  /** Webhooks that answered 410 Gone: nothing more is sent to them until a turn disables them. */
  const gone = new Set<string>();
  /** Whether the last turn left due deliveries behind for want of claim slots. */
  let moreDue = false;
  let turnsStarted = 0;
  /**
   * Webhooks deleted, disabled or given another URL, each with the number of the last turn begun
   * before: their claims are not sent until a turn begun after it has given back the stale ones.
   * Sent in between, a changed URL's claims (up to 16 rounds of its slots) went to the old URL.
   */
  const changedWebhooks = new Map<string, number>();

  /** Records what came back, gives back unwanted claims and claims what is due, in one shared commit. */
  async function turn(batch: Finished[], now: number, claiming: Claiming) {
    const turnNumber = ++turnsStarted;
    for (const { attempt } of batch) unclaim(attempt);
    for (const { url, startedAt } of sending.values()) claimDepth.inFlight(url, now - startedAt);
    let changes: TurnChanges | undefined;
    try {
      await store.transactionBatched(async (tx) => {
        await recordOutcomes(app, tx, batch);
        const givenBack = await giveBackUnwanted(tx);
        const claims = claiming === "none" ? [] : await claimDue(tx, now);
        // The queue's memory follows the database at once: given-back claims are not sent, and
        // new ones count against the limits while their commit reaches the disk.
        changes = { givenBack, claims };
        for (const id of givenBack) withheld.add(id);
        for (const { attempt } of claims) claim(attempt);
        committing = claims.length;
      });
    } catch (error) {
      // Rolled back: the outcomes are written by a later turn, and the claims stay as they were.
      committing = 0;
      for (const { attempt } of batch) claim(attempt);
      if (changes) {
        for (const id of changes.givenBack) withheld.delete(id);
        for (const { attempt } of changes.claims) unclaim(attempt);
      }
      throw error;
    }
    const { givenBack, claims } = changes!;
    committing = 0;
    if (givenBack.size > 0) {
      for (const { attempt } of waiting) if (givenBack.has(attempt.deliveryId)) unclaim(attempt);
      waiting = waiting.filter((c) => !givenBack.has(c.attempt.deliveryId));
      for (const id of givenBack) withheld.delete(id);
    }
    // The turn disabled the webhooks that answered 410 in its batch, and gave back their claims.
    for (const { attempt, result } of batch) if (isGone(result)) gone.delete(attempt.webhookId);
    for (const [webhookId, lastTurnBefore] of changedWebhooks) if (lastTurnBefore < turnNumber) changedWebhooks.delete(webhookId);
    waiting = waiting.concat(claims);
  }

  function claim(attempt: ClaimedAttempt) {
    claimed.add(attempt.deliveryId);
    claimedPerUrl.increment(attempt.url);
    claimedPerOrganization.increment(attempt.organizationId);
  }

  function unclaim(attempt: ClaimedAttempt) {
    claimed.delete(attempt.deliveryId);
    claimedPerUrl.decrement(attempt.url);
    claimedPerOrganization.decrement(attempt.organizationId);
  }

  /**
   * Claims not sent yet are given back when their delivery was discarded meanwhile (webhook
   * disabled or deleted) or their webhook's URL changed (claimed again, for the new one), or when
   * their URL turned slow and they exceed its claim limit now.
   */
  async function giveBackUnwanted(tx: Transaction): Promise<Set<number>> {
    const unwanted = await tx.webhookQueue.staleClaims(waiting.map((c) => c.attempt));
    for (const { attempt } of newestOverLimit(waiting, claimedPerUrl.excess(claimLimitOf))) unwanted.add(attempt.deliveryId);
    await tx.webhookQueue.releaseAttempts(waiting.filter((c) => unwanted.has(c.attempt.deliveryId)).map((c) => c.attempt));
    return unwanted;
  }

  /** Claims due deliveries up to the claim limits, recording each try before anything is sent. */
  async function claimDue(tx: Transaction, now: number): Promise<Claim[]> {
    const claims: Claim[] = [];
    const busy = [...claimed];
    const load = claimedPerUrl.copy();
    const organizationLoad = claimedPerOrganization.copy();
    const organizationShare = () => organizationClaimShare;
    let free = claimLimit - claimed.size;
    while (free > 0) {
      const asked = free;
      const rows = await tx.webhookQueue.due(now, { urls: load.atLimit(claimLimitOf), deliveryIds: busy, organizationIds: organizationLoad.atLimit(organizationShare) }, asked);
      let heldBack = false;
      for (const due of rows) {
        if (load.get(due.url) >= claimLimitOf(due.url) || organizationLoad.get(due.organizationId) >= organizationClaimShare) {
          heldBack = true;
          continue;
        }
        const attemptNumber = due.attempts + 1;
        // Only after a crash during the last try: its outcome never came back, and no try is left.
        if (attemptNumber > attemptsAllowed) {
          await tx.webhookQueue.discard(due.deliveryId, now);
          continue;
        }
        claims.push({ due, attempt: newAttempt(config, due, attemptNumber, now) });
        busy.push(due.deliveryId);
        load.increment(due.url);
        organizationLoad.increment(due.organizationId);
        free--;
      }
      // Fewer rows than asked for and none held back by a per-URL limit: nothing more is due.
      if (rows.length === 0 || (rows.length < asked && !heldBack)) break;
    }
    moreDue = free === 0 || load.atLimit(claimLimitOf).length > 0 || organizationLoad.atLimit(organizationShare).length > 0;
    await tx.webhookQueue.recordAttempts(claims.map((c) => c.attempt));
    if (claims.length > 0 || moreDue) log.debug("webhook deliveries claimed", { claimed: claims.length, moreDue });
    return claims;
  }

  /** Starts waiting claims, oldest first, as far as the sending limits allow. */
  function startSending(): Promise<Finished>[] {
    const started: Promise<Finished>[] = [];
    for (let i = 0; i < waiting.length && sending.size < limits.sending; ) {
      const claim = waiting[i]!;
      const sendable = !withheld.has(claim.attempt.deliveryId) && !gone.has(claim.due.webhookId) && !changedWebhooks.has(claim.due.webhookId);
      if (sendable && sendingPerUrl.get(claim.due.url) < limits.sendingPerUrl && sendingPerOrganization.get(claim.due.organizationId) < limits.sendingPerOrganization) {
        waiting.splice(i, 1);
        started.push(send(claim));
      } else i++;
    }
    return started;
  }

  function send({ attempt, due }: Claim): Promise<Finished> {
    const shared = bodies.get(due.eventId) ?? { body: envelopeBody({ id: due.eventId, type: due.type, createdAt: due.eventCreatedAt, inboxId: due.inboxId, messageId: due.messageId, payload: due.payload }), sends: 0 };
    shared.sends++;
    bodies.set(due.eventId, shared);
    const body = shared.body;
    sendingPerUrl.increment(due.url);
    sendingPerOrganization.increment(due.organizationId);
    const startedAt = clock.now();
    sending.set(attempt.deliveryId, { url: attempt.url, startedAt });
    return deliver({ url: due.url, secret: due.secret, eventId: due.eventId, body })
      .catch((error: unknown): TryResult => ({ statusCode: null, response: null, error: error instanceof Error ? error.message : String(error) }))
      .then((result) => {
        const finishedAt = clock.now();
        sending.delete(attempt.deliveryId);
        sendingPerUrl.decrement(attempt.url);
        sendingPerOrganization.decrement(due.organizationId);
        if (--shared.sends === 0) bodies.delete(due.eventId);
        claimDepth.finished(attempt.url, finishedAt - startedAt);
        if (isGone(result)) gone.add(attempt.webhookId);
        return { attempt, result, finishedAt };
      });
  }

  /**
   * At once when the sending slots would otherwise run dry of claims, when half the claim slots
   * are held by outcomes waiting to be written, or when every claim has come back (no other
   * outcome to wait for); otherwise after a window that lets many outcomes share one commit.
   */
  function recordAtOnce(outcomesBack: number): boolean {
    const runningDry = moreDue && waiting.length + committing < limits.sending;
    return runningDry || outcomesBack >= claimLimit / 2 || outcomesBack === claimed.size;
  }

  /** Claims the stop leaves unsent: no attempt, due again as before. */
  async function releaseWaiting() {
    const unsent = waiting;
    waiting = [];
    for (const { attempt } of unsent) unclaim(attempt);
    await store.transaction((tx) => tx.webhookQueue.releaseAttempts(unsent.map((c) => c.attempt)));
  }

  return startQueue<Finished>(app, "webhooks", {
    batchWindowMs,
    idleMs,
    resume: () => store.webhookQueue.closeUnfinishedAttempts(clock.now(), unfinishedAttemptError),
    turn,
    startTries: startSending,
    recordAtOnce,
    nextDueAfter: (after) => store.webhookQueue.nextDueAfter(after),
    release: releaseWaiting,
    reconsider: (webhookId) => changedWebhooks.set(webhookId, turnsStarted),
  });
}

/** The newest of the `waiting` claims of each URL over its claim limit, as many as `excess` says it is over. */
function newestOverLimit(waiting: Claim[], excess: Map<string, number>): Claim[] {
  const over: Claim[] = [];
  for (let i = waiting.length - 1; i >= 0 && excess.size > 0; i--) {
    const claim = waiting[i]!;
    const left = excess.get(claim.attempt.url);
    if (left === undefined) continue;
    over.push(claim);
    if (left > 1) excess.set(claim.attempt.url, left - 1);
    else excess.delete(claim.attempt.url);
  }
  return over;
}

function newAttempt(config: Config, due: DueWebhookDelivery, attemptNumber: number, now: number): ClaimedAttempt {
  return {
    id: attemptId(now),
    webhookId: due.webhookId,
    deliveryId: due.deliveryId,
    event: due.type,
    url: due.url,
    organizationId: due.organizationId,
    attemptNumber,
    dueAt: due.dueAt,
    createdAt: now,
    // Should the outcome never be recorded, the next try comes when a timed-out try's would.
    retryAt: now + config.webhookTimeoutMs + retryDelayMs(config.webhookRetryDelays, attemptNumber),
  };
}

/** `wha_`, the time in base 36 (fixed width), then random: new rows append to the primary key index. */
const attemptId = (now: number) => `wha_${now.toString(36).padStart(9, "0")}${randomToken(8)}`;
