/**
 * The webhook queue worker, in charge of every delivery row from the moment it is due. A turn,
 * run from a timer in the process and whenever tries come back, writes in one transaction the
 * outcomes that came back and the claims it makes: for each due delivery, its attempt row, its
 * attempts count and the time of its next try should this one never report back. The claimed
 * deliveries are sent only once that transaction is on disk, with bounded concurrency overall and
 * per URL. The transaction goes through the store's group commit, whose fsync runs off the event
 * loop: tries in flight go on while a turn's commit reaches the disk. A turn claims up to
 * `claimAhead` rounds of requests (per URL, only for URLs that answer promptly: url-load.ts), so
 * that one commit serves many deliveries and a free slot never waits for a commit. One turn runs
 * at a time. The same code path runs after a restart: what is due goes out at once.
 */
import type { App } from "../app";
import { createResolver } from "../dns/resolver";
import { randomToken } from "../ids";
import type { RunningPart } from "../serve";
import type { ClaimedAttempt, DueDelivery } from "../store/sqlite/webhook-queue";
import { createDeliverer } from "./deliver";
import { envelopeBody } from "./envelope";
import { recordOutcomes, type Finished } from "./outcomes";
import { isGone, maxAttempts, retryDelayMs, type TryResult } from "./policy";
import type { Lookup } from "./ssrf";
import { ClaimDepth, UrlCounts } from "./url-load";

export interface WebhookQueue extends RunningPart {
  /** Sends everything due now (by the App's clock) and resolves once every outcome is recorded. */
  runDueNow(): Promise<void>;
}

/** How often the database is asked for newly due deliveries. */
const pollIntervalMs = 250;
/** Claims made ahead, in rounds of the concurrency limits (overall, and per URL that answers promptly). */
const claimAhead = 16;
/** A try that takes this long, or longer, makes its URL slow (url-load.ts: ClaimDepth). */
const promptTryMs = 1000;
/** Longest wait before outcomes that came back are written, so that they share a commit. */
const batchWindowMs = 50;
export const unfinishedAttemptError = "inboxd stopped before the outcome of this try was recorded";

interface Claim {
  attempt: ClaimedAttempt;
  due: DueDelivery;
}

interface Sending {
  url: string;
  startedAt: number;
  done: Promise<void>;
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
    lookup: options.lookup ?? createResolver(config.dnsServers).lookupHostAddresses,
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
    now: () => clock.now(),
  });
  const attemptsAllowed = maxAttempts(config.webhookRetryDelays);
  const limits = { sending: config.webhookConcurrency, sendingPerUrl: config.webhookConcurrencyPerUrl };
  const claimLimit = limits.sending * claimAhead;
  const claimDepth = new ClaimDepth(limits.sendingPerUrl, claimAhead, promptTryMs);
  const claimLimitOf = (url: string) => claimDepth.limit(url);

  /** Claimed deliveries whose outcome is not recorded yet: being committed, waiting, sending, or back. */
  const claimed = new Set<number>();
  const claimedPerUrl = new UrlCounts();
  /** Claimed and on disk, waiting for a sending slot, in claim order. */
  let waiting: Claim[] = [];
  /** Waiting claims that the turn in progress gives back: not to be sent. */
  const withheld = new Set<number>();
  /** Claims of the turn in progress, on their way to disk. */
  let committing = 0;
  const sending = new Map<number, Sending>();
  const sendingPerUrl = new UrlCounts();
  /** Webhooks that answered 410 Gone: nothing more is sent to them until a turn disables them. */
  const gone = new Set<string>();
  let finished: Finished[] = [];
  /** Whether the last turn left due deliveries behind for want of claim slots. */
  let moreDue = false;
  let stopped = false;
  /** The turn in progress, and whether another one is wanted right after it. */
  let current: Promise<void> | undefined;
  let again = false;
  let soonTurn: ReturnType<typeof setImmediate> | undefined;
  let laterTurn: ReturnType<typeof setTimeout> | undefined;
  let idleWaiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  store.webhookQueue.closeUnfinishedAttempts(clock.now(), unfinishedAttemptError);

  /** Starts a turn now, or right after the one in progress. */
  function requestTurn() {
    cancelScheduledTurn();
    if (current) {
      again = true;
      return;
    }
    current = turn()
      .catch((error: unknown) => {
        log.error("webhook queue turn failed", { error });
        settleIdleWaiters(error);
      })
      .finally(() => {
        current = undefined;
        if (again) {
          again = false;
          requestTurn();
        } else if (claimed.size === 0 && finished.length === 0) settleIdleWaiters();
      });
  }

  async function turn() {
    const batch = finished;
    finished = [];
    for (const { attempt } of batch) unclaim(attempt);
    const now = clock.now();
    for (const { url, startedAt } of sending.values()) claimDepth.inFlight(url, now - startedAt);
    let changes: TurnChanges | undefined;
    try {
      await store.transactionBatched(() => {
        recordOutcomes(app, batch);
        const givenBack = giveBackUnwanted();
        const claims = stopped ? [] : claimDue();
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
      finished = batch.concat(finished);
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
    waiting = waiting.concat(claims);
    startSending();
  }

  function claim(attempt: ClaimedAttempt) {
    claimed.add(attempt.deliveryId);
    claimedPerUrl.increment(attempt.url);
  }

  function unclaim(attempt: ClaimedAttempt) {
    claimed.delete(attempt.deliveryId);
    claimedPerUrl.decrement(attempt.url);
  }

  /**
   * Claims not sent yet are given back when their delivery was discarded meanwhile (webhook
   * disabled or deleted), or when their URL turned slow and they exceed its claim limit now.
   */
  function giveBackUnwanted(): Set<number> {
    const unwanted = store.webhookQueue.notPending(waiting.map((c) => c.attempt.deliveryId));
    for (const { attempt } of claimsOverLimit()) unwanted.add(attempt.deliveryId);
    store.webhookQueue.releaseAttempts(waiting.filter((c) => unwanted.has(c.attempt.deliveryId)).map((c) => c.attempt));
    return unwanted;
  }

  /** The newest waiting claims of each URL over its claim limit, as many as it is over. */
  function claimsOverLimit(): Claim[] {
    const excess = claimedPerUrl.excess(claimLimitOf);
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

  /**
   * Soon when the sending slots would otherwise run dry of claims, when half the claim slots are
   * held by outcomes waiting to be written, or when every claim has come back (no other outcome
   * to wait for); otherwise after a window that lets many outcomes share one commit.
   */
  function scheduleTurn() {
    if (stopped) return;
    const runningDry = moreDue && waiting.length + committing < limits.sending;
    const slotsHeld = finished.length >= claimLimit / 2;
    const allBack = finished.length > 0 && finished.length === claimed.size;
    if ((runningDry || slotsHeld || allBack) && soonTurn === undefined) soonTurn = setImmediate(requestTurn);
    else if (laterTurn === undefined) laterTurn = setTimeout(requestTurn, batchWindowMs);
  }

  function cancelScheduledTurn() {
    if (soonTurn !== undefined) clearImmediate(soonTurn);
    if (laterTurn !== undefined) clearTimeout(laterTurn);
    soonTurn = laterTurn = undefined;
  }

  function settleIdleWaiters(error?: unknown) {
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const waiter of waiters) error === undefined ? waiter.resolve() : waiter.reject(error);
  }

  /** Claims due deliveries up to the claim limits, recording each try before anything is sent. */
  function claimDue(): Claim[] {
    const now = clock.now();
    const claims: Claim[] = [];
    const busy = [...claimed];
    const load = claimedPerUrl.copy();
    let free = claimLimit - claimed.size;
    while (free > 0) {
      const asked = free;
      const rows = store.webhookQueue.due(now, load.atLimit(claimLimitOf), busy, asked);
      let heldBack = false;
      for (const due of rows) {
        if (load.get(due.url) >= claimLimitOf(due.url)) {
          heldBack = true;
          continue;
        }
        const attemptNumber = due.attempts + 1;
        // Only after a crash during the last try: its outcome never came back, and no try is left.
        if (attemptNumber > attemptsAllowed) {
          store.webhookQueue.discard(due.deliveryId, now);
          continue;
        }
        claims.push({ due, attempt: newAttempt(due, attemptNumber, now) });
        busy.push(due.deliveryId);
        load.increment(due.url);
        free--;
      }
      // Fewer rows than asked for and none held back by a per-URL limit: nothing more is due.
      if (rows.length === 0 || (rows.length < asked && !heldBack)) break;
    }
    moreDue = free === 0 || load.atLimit(claimLimitOf).length > 0;
    store.webhookQueue.recordAttempts(claims.map((c) => c.attempt));
    if (claims.length > 0 || moreDue) log.debug("webhook deliveries claimed", { claimed: claims.length, moreDue });
    return claims;
  }

  function newAttempt(due: DueDelivery, attemptNumber: number, now: number): ClaimedAttempt {
    return {
      id: attemptId(now),
      webhookId: due.webhookId,
      deliveryId: due.deliveryId,
      event: due.type,
      url: due.url,
      attemptNumber,
      dueAt: due.dueAt,
      createdAt: now,
      // Should the outcome never be recorded, the next try comes when a timed-out try's would.
      retryAt: now + config.webhookTimeoutMs + retryDelayMs(config.webhookRetryDelays, attemptNumber),
    };
  }

  /** Starts waiting claims, oldest first, as far as the sending limits allow. */
  function startSending() {
    for (let i = 0; i < waiting.length && sending.size < limits.sending; ) {
      const claim = waiting[i]!;
      const sendable = !withheld.has(claim.attempt.deliveryId) && !gone.has(claim.due.webhookId);
      if (sendable && sendingPerUrl.get(claim.due.url) < limits.sendingPerUrl) {
        waiting.splice(i, 1);
        send(claim);
      } else i++;
    }
  }

  function send({ attempt, due }: Claim) {
    const body = envelopeBody({ id: due.eventId, type: due.type, createdAt: due.eventCreatedAt, inboxId: due.inboxId, messageId: due.messageId, payload: due.payload });
    sendingPerUrl.increment(due.url);
    const startedAt = clock.now();
    const done = deliver({ url: due.url, secret: due.secret, eventId: due.eventId, body })
      .catch((error: unknown): TryResult => ({ statusCode: null, response: null, error: error instanceof Error ? error.message : String(error) }))
      .then((result) => {
        const finishedAt = clock.now();
        sending.delete(attempt.deliveryId);
        sendingPerUrl.decrement(attempt.url);
        claimDepth.finished(attempt.url, finishedAt - startedAt);
        finished.push({ attempt, result, finishedAt });
        if (isGone(result)) gone.add(attempt.webhookId);
        startSending();
        scheduleTurn();
      });
    sending.set(attempt.deliveryId, { url: attempt.url, startedAt, done });
  }

  /** Waits for the turn in progress, and the ones it asked for, to finish. */
  async function turnsDone() {
    while (current) await current;
  }

  const timer = setInterval(scheduleTurn, pollIntervalMs);
  scheduleTurn();

  return {
    name: "webhooks",
    async runDueNow() {
      const idle = new Promise<void>((resolve, reject) => idleWaiters.push({ resolve, reject }));
      requestTurn();
      await idle;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      cancelScheduledTurn();
      await turnsDone();
      const unsent = waiting;
      waiting = [];
      for (const { attempt } of unsent) unclaim(attempt);
      try {
        store.transaction(() => store.webhookQueue.releaseAttempts(unsent.map((c) => c.attempt)));
      } catch (error) {
        log.error("webhook queue: releasing unsent claims failed; they go out at their retry time", { error });
      }
      const inFlight = Promise.all([...sending.values()].map((s) => s.done));
      await Promise.race([inFlight, new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref())]);
      // The last outcomes; a failure is logged by requestTurn.
      requestTurn();
      await turnsDone();
    },
  };
}

/** `wha_`, the time in base 36 (fixed width), then random: new rows append to the primary key index. */
const attemptId = (now: number) => `wha_${now.toString(36).padStart(9, "0")}${randomToken(8)}`;
