/**
 * The webhook queue worker, in charge of every delivery row from the moment it is due: a timer
 * in the process claims due deliveries, records each try (attempt row, attempts count, and the
 * time of the next try should this one never report back) before sending it, sends with bounded
 * concurrency overall and per URL, and records the outcomes. One turn writes the outcomes that
 * came back and the claims it makes in one transaction, so the bookkeeping cost is shared by many
 * deliveries. The same code path runs after a restart: what is due goes out at once.
 */
import type { App } from "../app";
import { createResolver } from "../dns/resolver";
import { newId } from "../ids";
import type { RunningPart } from "../serve";
import type { ClaimedAttempt, DueDelivery } from "../store/webhook-queue";
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
  const inFlight = new Map<number, { url: string; done: Promise<void> }>();
  const perUrl = new Map<string, number>();
  let finished: Finished[] = [];
  let stopped = false;
  let turnScheduled = false;

  store.webhookQueue.closeUnfinishedAttempts(clock.now(), unfinishedAttemptError);

  /** One turn: record what came back and claim what is due, in one transaction; then send the claims. */
  function turn() {
    const batch = finished;
    finished = [];
    // The slots of finished tries are free for this turn's claims.
    for (const { attempt } of batch) release(attempt);
    let claimed: Claim[];
    try {
      claimed = store.transaction(() => {
        recordOutcomes(batch);
        return stopped ? [] : claimDue();
      });
    } catch (error) {
      // Rolled back: the outcomes are written by a later turn.
      finished = batch.concat(finished);
      throw error;
    }
    for (const claim of claimed) send(claim);
  }

  function scheduleTurn() {
    if (turnScheduled || stopped) return;
    turnScheduled = true;
    setImmediate(() => {
      turnScheduled = false;
      try {
        turn();
      } catch (error) {
        log.error("webhook queue turn failed", { error });
      }
    });
  }

  /** Claims due deliveries up to the free slots, never more per URL than its limit allows. */
  function claimDue(): Claim[] {
    const now = clock.now();
    const claimed: Claim[] = [];
    const load = new Map(perUrl);
    const busy = [...inFlight.keys()];
    let free = config.webhookConcurrency - inFlight.size;
    while (free > 0) {
      const saturated = [...load].filter(([, count]) => count >= config.webhookConcurrencyPerUrl).map(([url]) => url);
      const asked = free;
      const rows = store.webhookQueue.due(now, saturated, busy, asked);
      let heldBack = false;
      for (const due of rows) {
        if ((load.get(due.url) ?? 0) >= config.webhookConcurrencyPerUrl) {
          heldBack = true;
          continue;
        }
        const attemptNumber = due.attempts + 1;
        // Only after a crash during the last try: its outcome never came back, and no try is left.
        if (attemptNumber > attemptsAllowed) {
          store.webhookQueue.discard(due.deliveryId, now);
          continue;
        }
        const attempt: ClaimedAttempt = {
          id: newId("wha"),
          webhookId: due.webhookId,
          deliveryId: due.deliveryId,
          event: due.type,
          url: due.url,
          attemptNumber,
          createdAt: now,
          // Should the outcome never be recorded, the next try comes when a timed-out try's would.
          retryAt: now + config.webhookTimeoutMs + retryDelayMs(config.webhookRetryDelays, attemptNumber),
        };
        store.webhookQueue.recordAttempt(attempt);
        load.set(due.url, (load.get(due.url) ?? 0) + 1);
        busy.push(due.deliveryId);
        claimed.push({ attempt, due });
        free--;
      }
      // Fewer rows than asked for and none held back by a per-URL limit: nothing more is due.
      if (rows.length === 0 || (rows.length < asked && !heldBack)) break;
    }
    return claimed;
  }

  function send({ attempt, due }: Claim) {
    const body = envelopeBody({ id: due.eventId, type: due.type, createdAt: due.eventCreatedAt, inboxId: due.inboxId, messageId: due.messageId, payload: due.payload });
    const done = tryDelivery(
      { url: due.url, secret: due.secret, eventId: due.eventId, body },
      { lookup, allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs, now: () => clock.now() },
    )
      .catch((error: unknown): TryResult => ({ statusCode: null, response: null, error: error instanceof Error ? error.message : String(error) }))
      .then((result) => {
        finished.push({ attempt, result, finishedAt: clock.now() });
        scheduleTurn();
      });
    inFlight.set(attempt.deliveryId, { url: due.url, done });
    perUrl.set(due.url, (perUrl.get(due.url) ?? 0) + 1);
  }

  function release(attempt: ClaimedAttempt) {
    inFlight.delete(attempt.deliveryId);
    const count = (perUrl.get(attempt.url) ?? 1) - 1;
    if (count > 0) perUrl.set(attempt.url, count);
    else perUrl.delete(attempt.url);
  }

  function recordOutcomes(batch: Finished[]) {
    for (const [webhookId, outcomes] of groupByWebhook(batch)) {
      updateWebhookHealth(webhookId, outcomes);
      const enabled = store.webhookQueue.isEnabled(webhookId);
      for (const { attempt, result, finishedAt } of outcomes) {
        const success = isSuccess(result);
        const retry = !success && enabled && attempt.attemptNumber < attemptsAllowed;
        store.webhookQueue.recordOutcome({
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
      for (;;) {
        turn();
        if (inFlight.size === 0) return;
        await Promise.race([...inFlight.values()].map((f) => f.done));
      }
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      const all = Promise.all([...inFlight.values()].map((f) => f.done));
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref())]);
      try {
        turn();
      } catch (error) {
        log.error("webhook queue: recording the last outcomes failed", { error });
      }
    },
  };
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
