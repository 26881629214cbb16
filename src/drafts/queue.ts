/**
 * The drafts queue's policy: scheduled drafts go out when their `sendAt` falls due; the queue
 * engine (src/queue/engine.ts) sleeps until then, by the App's clock, and wakes when a draft is
 * scheduled. A turn claims due drafts (status `sending`, one claim per draft), and each claimed
 * draft is sent through the send path, which marks it `sent` in the transaction that stores its
 * message: a crash before that commit leaves it `sending`, and the next start schedules it again
 * (nothing was sent); a crash after it leaves it `sent`. So a scheduled draft goes out once.
 *
 * A send refused by the rate limit (or the message memory budget) is not lost: the draft is
 * scheduled again for when the refusal says to retry (Retry-After: the next window). A refusal that
 * retrying cannot cure (the draft's message or thread is gone, a field no longer passes) fails
 * the draft, with the refusal as `failureReason`. An unexpected error is retried a few times.
 */
import type { App } from "../app";
import { ServiceError } from "../errors";
import { Counts } from "../counts";
import { startQueue, type Claiming } from "../queue/engine";
import type { Queue } from "../queue/running";
import type { DraftRecord, DraftSettlement, Transaction } from "../store";
import { sendClaimed } from "./service";

/** Drafts sent at once: each is a whole send (compose, commit); more would only queue for the connection. */
const maxInFlight = 4;
/**
 * One organization's drafts in flight at most: the rest go to others' due drafts first. A tenant
 * that scheduled 20,000 drafts for one moment held every place, one claim after another, and
 * another organization's draft due a second later went out 4.5 s late.
 */
const maxInFlightPerOrganization = maxInFlight / 2;
/** A scheduled draft wakes the queue, so a longer sleep only delays what no wake announced. */
const idleMs = 60_000;
/** An unexpected error (not a refusal) is retried this often, this long apart, before the draft fails. */
const maxTries = 5;
const retryAfterErrorMs = 60_000;

interface Outcome {
  draft: DraftRecord;
  /** Undefined when it was sent (and marked so with its message). */
  settlement?: DraftSettlement;
}

export function startDraftsQueue(app: App): Queue {
  const { store, clock, log } = app;
  let claimed: DraftRecord[] = [];
  let inFlight = 0;
  /** Drafts claimed or being sent, by organization. */
  const held = new Counts();

  async function turn(outcomes: Outcome[], now: number, claiming: Claiming) {
    claimed = claimed.concat(
      await store.transaction(async (tx) => {
        for (const { draft, settlement } of outcomes) if (settlement) await tx.drafts.settle(draft.id, settlement, now);
        // On a database several nodes share, one may die sending: its drafts come back when its
        // lease runs out (the embedded engine's are all released by the resume, at start).
        if (claiming === "all due") await releaseLeftBehind(tx, now);
        if (claiming === "none") return [];
        // One at a time, so that each claim counts against its organization's share before the next.
        const drafts: DraftRecord[] = [];
        for (let free = maxInFlight - inFlight - claimed.length; free > 0; free--) {
          const [id] = await tx.drafts.due(now, 1, held.atLimit(() => maxInFlightPerOrganization));
          if (!id) break;
          const draft = await tx.drafts.claim(id, ["scheduled"], now);
          if (!draft) continue;
          drafts.push(draft);
          held.increment(draft.organizationId);
        }
        return drafts;
      }),
    );
  }

  /** Drafts left `sending` by a process that stopped before sending them (sending and marking commit together). */
  async function releaseLeftBehind(tx: Transaction, now: number) {
    const released = await tx.drafts.releaseUnfinished(now);
    if (released) log.info("drafts left being sent by a stopped process are scheduled again", { drafts: released });
  }

  function startTries(): Promise<Outcome>[] {
    const started = claimed.map((draft) => {
      inFlight++;
      return sendClaimed(app, draft).then(
        (sent): Outcome => {
          log.info("scheduled draft sent", { draftId: draft.id, messageId: sent.message.id });
          return { draft };
        },
        (error: unknown): Outcome => ({ draft, settlement: settlementOf(draft, error) }),
      ).finally(() => {
        inFlight--;
        held.decrement(draft.organizationId);
      });
    });
    claimed = [];
    return started;
  }

  function settlementOf(draft: DraftRecord, error: unknown): DraftSettlement {
    const now = clock.now();
    if (error instanceof ServiceError && (error.kind === "rate_limited" || error.kind === "unavailable")) {
      const retryAfterSeconds = Number(error.headers["Retry-After"] ?? 60);
      log.info("scheduled draft refused for now; scheduled again", { draftId: draft.id, reason: error.message, retryAfterSeconds });
      return { status: "scheduled", nextAttemptAt: now + retryAfterSeconds * 1000, failureReason: null };
    }
    if (error instanceof ServiceError) {
      log.info("scheduled draft failed", { draftId: draft.id, reason: error.message });
      return { status: "failed", nextAttemptAt: null, failureReason: error.message };
    }
    log.error("scheduled draft: sending failed", { draftId: draft.id, attempt: draft.attempts, error });
    if (draft.attempts >= maxTries) return { status: "failed", nextAttemptAt: null, failureReason: `inboxd could not send it after ${maxTries} tries (see its log)` };
    return { status: "scheduled", nextAttemptAt: now + retryAfterErrorMs, failureReason: null };
  }

  return startQueue<Outcome>(app, "drafts", {
    batchWindowMs: 50,
    idleMs,
    resume: () => store.transaction((tx) => releaseLeftBehind(tx, clock.now())),
    turn,
    startTries,
    recordAtOnce: () => true,
    nextDueAfter: (after) => store.drafts.nextDueAfter(after),
    // Every claim is started by the turn that made it: none is left to give back.
    release: async () => {},
  });
}
