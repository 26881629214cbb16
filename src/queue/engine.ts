/**
 * The engine under inboxd's queues that live in the database: outbound mail (src/outbound/queue.ts),
 * webhook deliveries (src/webhooks/queue.ts) and the analysis of accepted inbound mail
 * (src/smtp/inbound-queue.ts). What keeps such a queue safe and fast is the same for each, and easy to get subtly wrong: one turn at a time; every try counted before it is made,
 * so that a crash neither loses it nor retries it in a hot loop; outcomes that wait a moment so
 * that several share one commit; asleep until the next row falls due, yet awake at once when work
 * is queued; the same path after a restart; a stop that gives back what it never started and
 * waits for what it did. So it is written once, here, and each queue brings only its policy: what
 * it claims, the lanes and limits it sends within, and what an outcome means.
 */
import { failureRun } from "../log";
import { isStoreUnavailable } from "../store/unavailable";
import type { App } from "../app";
import type { Queue, QueueName } from "./running";

/**
 * What a turn claims: all that is due (it was woken, or a row fell due); more only for the work
 * the policy has in hand (the turn came for the outcomes of tries, and looking further would cost
 * more than it finds); or none (the queue stops).
 */
export type Claiming = "all due" | "top up" | "none";

export interface QueuePolicy<Outcome> {
  /** Longest wait before outcomes that came back are recorded, so that several share one commit. */
  batchWindowMs: number;
  /** Longest sleep while no row falls due: what is queued without a wake waits this long at most. */
  idleMs: number;
  /** Before the first turn: puts right what the last run left unfinished (a crash). */
  resume?(): Promise<void>;
  /**
   * One transaction: records `outcomes` and claims what is due at `now`, each try counted before
   * it is made; once that is committed, the claims are the policy's to start.
   */
  turn(outcomes: Outcome[], now: number, claiming: Claiming): Promise<void>;
  /** Starts the claimed tries its limits allow now. A try never rejects: a failure is an outcome. */
  startTries(): Promise<Outcome>[];
  /** Whether the outcomes back so far call for a turn at once rather than after the batch window. */
  recordAtOnce(outcomesBack: number): boolean;
  /** When the earliest row due after `after` falls due, if any does. */
  nextDueAfter(after: number): Promise<number | undefined>;
  /** Queue.reconsider: holds `owner`'s claims not started yet until a turn that begins after this call. */
  reconsider?(owner: string): void;
  /** The queue stops: gives back the claims no try started for, due again as before. */
  release(): Promise<void>;
  /** After the last turn: lets go of connections and threads. */
  close?(): void;
}

/** A turn that failed (the disk full or busy) is tried again after this long, not in a loop. */
const retryFailedTurnMs = 250;
/** Turns failing one after another are logged once, then once a minute: a disk full for an hour is not 14,400 lines. */
const repeatedFailureLogMs = 60_000;

export function startQueue<Outcome>(app: App, name: QueueName, policy: QueuePolicy<Outcome>): Queue {
  const { clock, log } = app;
  /** Outcomes back from tries, for the next turn to record. */
  let outcomes: Outcome[] = [];
  const tries = new Set<Promise<Outcome>>();
  /** The turn in progress, and whether another one is wanted right after it. */
  let current: Promise<void> | undefined;
  let again = false;
  /** The next turn, when one is scheduled: when (performance.now()), and how to call it off. */
  let scheduled: { at: number; cancel: () => void } | undefined;
  /** Whether the next turn claims all that is due; and the App's clock when one last did. */
  let lookAround = true;
  let lookedAt = 0;
  let resumed = false;
  let stopped = false;
  /**
   * Outcomes of a turn that failed for another reason than the database being out of reach: each
   * is recorded alone, claiming nothing, so that one that can never be recorded (a value the
   * database refuses) holds up no other try. One that fails alone too is set aside, and tried
   * alone again at each look for due rows; it is never dropped, which would send its try again.
   */
  let recordAlone: Outcome[] = [];
  let setAside: Outcome[] = [];
  let idleWaiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  /** Starts a turn now, or right after the one in progress. */
  function requestTurn() {
    cancelScheduled();
    if (current) {
      again = true;
      return;
    }
    current = turn().finally(() => {
      current = undefined;
      if (!again) return;
      again = false;
      requestTurn();
    });
  }

  /** Failed turns since the last that succeeded. */
  const failures = failureRun(repeatedFailureLogMs);
  /** Logs a failed turn: the first of a run of them, then one a minute with the count so far. */
  const logFailure = (write: (fields: Record<string, unknown>) => void) => failures.failed((failedTurns) => write(failedTurns ? { failedTurns } : {}));

  /**
   * Tries of set-aside outcomes that failed: the first logged, then one a minute with the count.
   * A full disk set aside the outcome of every message accepted and not yet analysed, and a line
   * each at each look was 34,000 lines an hour, on a disk the journal may share.
   */
  const setAsideFailures = failureRun(repeatedFailureLogMs);

  /** The database out of reach is the operator's one known problem, said as a warning; the turn retries. */
  const waitsForDatabase = (error: unknown) => {
    if (!isStoreUnavailable(error)) return false;
    logFailure((fields) => log.warn(`${name} queue turn waits for the database`, { error: (error as Error).message, ...fields }));
    return true;
  };

  /** Records the outcomes to record alone, each in a turn of its own; false when the database is out of reach. */
  async function recordEachAlone(): Promise<boolean> {
    while (recordAlone.length > 0) {
      const outcome = recordAlone.shift()!;
      try {
        await policy.turn([outcome], clock.now(), "none");
      } catch (error) {
        if (waitsForDatabase(error)) {
          recordAlone.unshift(outcome);
          return false;
        }
        setAsideFailures.failed((failedTries) =>
          log.error(`${name} queue: a try's outcome could not be recorded, even alone; it is set aside and tried again at each look for due rows`, { error, ...(failedTries ? { failedTries } : {}) }),
        );
        setAside.push(outcome);
      }
    }
    if (setAside.length === 0) {
      const failedTries = setAsideFailures.succeeded();
      if (failedTries) log.info(`${name} queue: the outcomes set aside are recorded`, { failedTries });
    }
    return true;
  }

  async function turn() {
    const claiming: Claiming = stopped ? "none" : lookAround ? "all due" : "top up";
    if (claiming !== "top up") recordAlone.push(...setAside.splice(0));
    if (!(await recordEachAlone())) {
      settleIdleWaiters(new Error(`${name} queue: the database is out of reach`));
      scheduleTurn(retryFailedTurnMs);
      return;
    }
    const batch = outcomes;
    outcomes = [];
    lookAround = false;
    const now = clock.now();
    try {
      if (!resumed) await policy.resume?.();
      resumed = true;
      await policy.turn(batch, now, claiming);
    } catch (error) {
      // Rolled back: the look it was to make waits for the next turn, and so do its outcomes,
      // each recorded alone unless the database was out of reach.
      lookAround ||= claiming === "all due";
      if (waitsForDatabase(error)) outcomes = batch.concat(outcomes);
      else {
        logFailure((fields) => log.error(`${name} queue turn failed${batch.length > 0 ? "; its outcomes are recorded one by one" : ""}`, { error, ...fields }));
        recordAlone.push(...batch);
      }
      settleIdleWaiters(error);
      scheduleTurn(retryFailedTurnMs);
      return;
    }
    if (claiming === "all due") lookedAt = now;
    const failedTurns = failures.succeeded();
    if (failedTurns) log.info(`${name} queue turns succeed again`, { failedTurns });
    if (!stopped) startTries();
    if (again) return;
    if (outcomes.length === 0 && tries.size === 0) settleIdleWaiters();
    if (!stopped && !scheduled) await sleepUntilDue();
  }

  /**
   * Nothing else to wait for: the next turn comes when the next row falls due, or after idleMs.
   * Rows that fell due since the last look are found too, so that a look cut short by a turn for
   * outcomes is made up at once.
   */
  async function sleepUntilDue() {
    let untilDue = Infinity;
    try {
      const dueAt = await policy.nextDueAfter(lookedAt);
      if (dueAt !== undefined) untilDue = Math.max(0, dueAt - clock.now());
    } catch (error) {
      log.error(`${name} queue: reading when the next row falls due failed`, { error });
    }
    scheduleTurn(Math.min(untilDue, policy.idleMs), true);
  }

  /** Keeps whichever comes first: the turn already scheduled, or this one. */
  function scheduleTurn(delayMs: number, look = false) {
    if (stopped) return;
    const at = performance.now() + delayMs;
    if (scheduled && scheduled.at <= at) return;
    cancelScheduled();
    const fire = () => {
      scheduled = undefined;
      lookAround ||= look;
      requestTurn();
    };
    if (delayMs === 0) {
      const immediate = setImmediate(fire);
      scheduled = { at, cancel: () => clearImmediate(immediate) };
    } else {
      const timeout = setTimeout(fire, delayMs);
      scheduled = { at, cancel: () => clearTimeout(timeout) };
    }
  }

  function cancelScheduled() {
    scheduled?.cancel();
    scheduled = undefined;
  }

  function startTries() {
    for (const attempt of policy.startTries()) {
      tries.add(attempt);
      void attempt.then((outcome) => {
        tries.delete(attempt);
        outcomes.push(outcome);
        if (stopped) return; // the stop's last turn records it
        startTries();
        scheduleTurn(policy.recordAtOnce(outcomes.length) ? 0 : policy.batchWindowMs);
      });
    }
  }

  function settleIdleWaiters(error?: unknown) {
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const waiter of waiters) error === undefined ? waiter.resolve() : waiter.reject(error);
  }

  /** Waits for the turn in progress, and the ones it asked for, to finish. */
  async function turnsDone() {
    while (current) await current;
  }

  const queue: Queue = {
    name,
    wake() {
      lookAround = true;
      scheduleTurn(0);
    },
    reconsider(owner) {
      policy.reconsider?.(owner);
      queue.wake();
    },
    async runDueNow() {
      const idle = new Promise<void>((resolve, reject) => idleWaiters.push({ resolve, reject }));
      lookAround = true;
      requestTurn();
      await idle;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      cancelScheduled();
      app.queues.remove(queue);
      await turnsDone();
      try {
        await policy.release();
      } catch (error) {
        log.error(`${name} queue: giving back the claims not started failed; they go out at their retry time`, { error });
      }
      await Promise.race([Promise.all(tries), new Promise((resolve) => setTimeout(resolve, app.shutdown.remainingMs()).unref())]);
      // The last outcomes; a failure is logged by the turn.
      requestTurn();
      await turnsDone();
      policy.close?.();
    },
  };
  app.queues.add(queue);
  // The same path after a restart: the first turn claims whatever is due. It waits a batch window,
  // so that the parts started after this one come up first.
  scheduleTurn(policy.batchWindowMs);
  return queue;
}
