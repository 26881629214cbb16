/**
 * The webhook queue worker, in charge of every delivery row from the moment it is due. A turn,
 * run from a timer in the process and whenever tries come back, writes in one transaction the
 * outcomes that came back and the claims it makes: for each due delivery, its attempt row, its
 * attempts count and the time of its next try should this one never report back. Only then are
 * the claimed deliveries sent, with bounded concurrency overall and per URL. A turn claims up to
 * `claimAhead` rounds of requests, so that one commit serves many deliveries and a free slot
 * never waits for a commit. The same code path runs after a restart: what is due goes out at once.
 */
import type { App } from "../app";
import { createResolver } from "../dns/resolver";
import { randomToken } from "../ids";
import type { RunningPart } from "../serve";
import type { AttemptOutcome, ClaimedAttempt, DueDelivery } from "../store/webhook-queue";
import { tryDelivery } from "./deliver";
import { envelopeBody } from "./envelope";
import { failingPeriodBeforeDisableMs, failingReason, goneReason, isGone, isSuccess, maxAttempts, retryDelayMs, type TryResult } from "./policy";
import type { Lookup } from "./ssrf";

export interface WebhookQueue extends RunningPart {
  /** Sends everything due now (by the App's clock) and resolves once every outcome is recorded. */
  runDueNow(): Promise<void>;
}

/** How often the database is asked for newly due deliveries. */
const pollIntervalMs = 250;
/** Claims made ahead, in rounds of the concurrency limits (overall and per URL). */
const claimAhead = 4;
/** Longest wait before outcomes that came back are written, so that they share a commit. */
const batchWindowMs = 20;
export const unfinishedAttemptError = "inboxd stopped before the outcome of this try was recorded";

interface Claim {
  attempt: ClaimedAttempt;
  due: DueDelivery;
}

interface Finished {
  attempt: ClaimedAttempt;
  result: TryResult;
  finishedAt: number;
}

export function startWebhookQueue(app: App, options: { lookup?: Lookup } = {}): WebhookQueue {
  const { config, store, clock, log } = app;
  const lookup = options.lookup ?? createResolver(config.dnsServers).lookupHostAddresses;
  const attemptsAllowed = maxAttempts(config.webhookRetryDelays);
  const limits = { sending: config.webhookConcurrency, sendingPerUrl: config.webhookConcurrencyPerUrl };
  const claimLimit = limits.sending * claimAhead;
  const claimLimitPerUrl = limits.sendingPerUrl * claimAhead;

  /** Claimed deliveries whose outcome is not recorded yet: waiting, sending, or back. */
  const claimed = new Set<number>();
  const claimedPerUrl = new Counter();
  /** Claimed and recorded, waiting for a sending slot, in claim order. */
  let waiting: Claim[] = [];
  const sending = new Map<number, Promise<void>>();
  const sendingPerUrl = new Counter();
  /** Webhooks that answered 410 Gone since the last turn: nothing more is sent to them until it disables them. */
  const gone = new Set<string>();
  let finished: Finished[] = [];
  /** Whether the last turn left due deliveries behind for want of claim slots. */
  let moreDue = false;
  let stopped = false;
  let soonTurn: ReturnType<typeof setImmediate> | undefined;
  let laterTurn: ReturnType<typeof setTimeout> | undefined;
  let idleWaiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  store.webhookQueue.closeUnfinishedAttempts(clock.now(), unfinishedAttemptError);

  function turn() {
    cancelScheduledTurn();
    const batch = finished;
    finished = [];
    for (const { attempt } of batch) unclaim(attempt);
    let changes: { cancelled: Set<number>; claims: Claim[] };
    try {
      changes = store.transaction(() => {
        recordOutcomes(batch);
        return { cancelled: cancelUnwanted(), claims: stopped ? [] : claimDue() };
      });
    } catch (error) {
      // Rolled back: the outcomes are written by a later turn.
      finished = batch.concat(finished);
      for (const { attempt } of batch) claim(attempt);
      throw error;
    }
    if (changes.cancelled.size > 0) {
      for (const { attempt } of waiting) if (changes.cancelled.has(attempt.deliveryId)) unclaim(attempt);
      waiting = waiting.filter((c) => !changes.cancelled.has(c.attempt.deliveryId));
    }
    gone.clear();
    for (const { attempt } of changes.claims) claim(attempt);
    waiting = waiting.concat(changes.claims);
    startSending();
    if (claimed.size === 0 && finished.length === 0) settleIdleWaiters();
  }

  function claim(attempt: ClaimedAttempt) {
    claimed.add(attempt.deliveryId);
    claimedPerUrl.increment(attempt.url);
  }

  function unclaim(attempt: ClaimedAttempt) {
    claimed.delete(attempt.deliveryId);
    claimedPerUrl.decrement(attempt.url);
  }

  /** Claims not sent yet whose delivery was discarded meanwhile (webhook disabled or deleted) are undone. */
  function cancelUnwanted(): Set<number> {
    const cancelled = store.webhookQueue.notPending(waiting.map((c) => c.attempt.deliveryId));
    store.webhookQueue.releaseAttempts(waiting.filter((c) => cancelled.has(c.attempt.deliveryId)).map((c) => c.attempt));
    return cancelled;
  }

  function runScheduledTurn() {
    try {
      turn();
    } catch (error) {
      log.error("webhook queue turn failed", { error });
      settleIdleWaiters(error);
    }
  }

  /**
   * Soon when the sending slots would otherwise run dry of claims, or when half the claim slots
   * are held by outcomes waiting to be written; otherwise after a window that lets many outcomes
   * share one commit.
   */
  function scheduleTurn() {
    if (stopped) return;
    const runningDry = moreDue && waiting.length < limits.sending;
    const slotsHeld = finished.length >= claimLimit / 2;
    if ((runningDry || slotsHeld) && soonTurn === undefined) soonTurn = setImmediate(runScheduledTurn);
    else if (laterTurn === undefined) laterTurn = setTimeout(runScheduledTurn, batchWindowMs);
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
      const rows = store.webhookQueue.due(now, load.atLeast(claimLimitPerUrl), busy, asked);
      let heldBack = false;
      for (const due of rows) {
        if (load.get(due.url) >= claimLimitPerUrl) {
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
    moreDue = free === 0 || load.atLeast(claimLimitPerUrl).length > 0;
    store.webhookQueue.recordAttempts(claims.map((c) => c.attempt));
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
      createdAt: now,
      // Should the outcome never be recorded, the next try comes when a timed-out try's would.
      retryAt: now + config.webhookTimeoutMs + retryDelayMs(config.webhookRetryDelays, attemptNumber),
    };
  }

  /** Starts waiting claims, oldest first, as far as the sending limits allow. */
  function startSending() {
    for (let i = 0; i < waiting.length && sending.size < limits.sending; ) {
      const claim = waiting[i]!;
      if (sendingPerUrl.get(claim.due.url) < limits.sendingPerUrl && !gone.has(claim.due.webhookId)) {
        waiting.splice(i, 1);
        send(claim);
      } else i++;
    }
  }

  function send({ attempt, due }: Claim) {
    const body = envelopeBody({ id: due.eventId, type: due.type, createdAt: due.eventCreatedAt, inboxId: due.inboxId, messageId: due.messageId, payload: due.payload });
    sendingPerUrl.increment(due.url);
    const done = tryDelivery(
      { url: due.url, secret: due.secret, eventId: due.eventId, body },
      { lookup, allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs, now: () => clock.now() },
    )
      .catch((error: unknown): TryResult => ({ statusCode: null, response: null, error: error instanceof Error ? error.message : String(error) }))
      .then((result) => {
        sending.delete(attempt.deliveryId);
        sendingPerUrl.decrement(attempt.url);
        finished.push({ attempt, result, finishedAt: clock.now() });
        if (isGone(result)) gone.add(attempt.webhookId);
        startSending();
        scheduleTurn();
      });
    sending.set(attempt.deliveryId, done);
  }

  function recordOutcomes(batch: Finished[]) {
    const outcomes: AttemptOutcome[] = [];
    for (const [webhookId, group] of groupByWebhook(batch)) {
      updateWebhookHealth(webhookId, group);
      const enabled = store.webhookQueue.isEnabled(webhookId);
      for (const { attempt, result, finishedAt } of group) {
        const success = isSuccess(result);
        const retry = !success && enabled && attempt.attemptNumber < attemptsAllowed;
        outcomes.push({
          attemptId: attempt.id,
          deliveryId: attempt.deliveryId,
          ...result,
          success,
          finishedAt,
          deliveryStatus: success ? "succeeded" : retry ? "pending" : "failed",
          nextAttemptAt: retry ? finishedAt + retryDelayMs(config.webhookRetryDelays, attempt.attemptNumber) : null,
        });
      }
    }
    store.webhookQueue.recordOutcomes(outcomes);
  }

  /** A success ends a run of failures; 410 Gone, or 5 days of nothing but failures, disables the webhook. */
  function updateWebhookHealth(webhookId: string, outcomes: Finished[]) {
    const now = Math.max(...outcomes.map((o) => o.finishedAt));
    const disable = (reason: string) => {
      if (store.webhooks.disable(webhookId, reason, now)) log.warn("webhook disabled", { webhookId, reason });
    };
    if (outcomes.some((o) => isGone(o.result))) disable(goneReason);
    if (outcomes.some((o) => isSuccess(o.result))) {
      store.webhookQueue.endFailureRun(webhookId);
      return;
    }
    const since = store.webhookQueue.extendFailureRun(webhookId, Math.min(...outcomes.map((o) => o.attempt.createdAt)));
    if (since !== undefined && now - since >= failingPeriodBeforeDisableMs) disable(failingReason(since));
  }

  const timer = setInterval(scheduleTurn, pollIntervalMs);
  scheduleTurn();

  return {
    name: "webhooks",
    async runDueNow() {
      turn();
      if (claimed.size === 0) return;
      await new Promise<void>((resolve, reject) => idleWaiters.push({ resolve, reject }));
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      cancelScheduledTurn();
      const unsent = waiting;
      waiting = [];
      for (const { attempt } of unsent) unclaim(attempt);
      try {
        store.transaction(() => store.webhookQueue.releaseAttempts(unsent.map((c) => c.attempt)));
      } catch (error) {
        log.error("webhook queue: releasing unsent claims failed; they go out at their retry time", { error });
      }
      const inFlight = Promise.all(sending.values());
      await Promise.race([inFlight, new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref())]);
      try {
        turn();
      } catch (error) {
        log.error("webhook queue: recording the last outcomes failed", { error });
      }
    },
  };
}

/** `wha_`, the time in base 36 (fixed width), then random: new rows append to the primary key index. */
const attemptId = (now: number) => `wha_${now.toString(36).padStart(9, "0")}${randomToken(8)}`;

/** Counts per URL, with the URLs at or over a limit. */
class Counter {
  constructor(private readonly counts = new Map<string, number>()) {}
  copy(): Counter {
    return new Counter(new Map(this.counts));
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  increment(key: string) {
    this.counts.set(key, this.get(key) + 1);
  }
  decrement(key: string) {
    const count = this.get(key) - 1;
    if (count > 0) this.counts.set(key, count);
    else this.counts.delete(key);
  }
  atLeast(limit: number): string[] {
    return [...this.counts].filter(([, count]) => count >= limit).map(([key]) => key);
  }
}

function groupByWebhook(batch: Finished[]): Map<string, Finished[]> {
  const groups = new Map<string, Finished[]>();
  for (const finished of batch) {
    const group = groups.get(finished.attempt.webhookId);
    if (group) group.push(finished);
    else groups.set(finished.attempt.webhookId, [finished]);
  }
  return groups;
}
