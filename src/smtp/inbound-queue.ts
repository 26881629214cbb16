/**
 * The inbound queue's policy: analysis after acceptance. The SMTP server commits each accepted
 * message with its envelope (store: acceptedInbound) and answers 250; this queue, run by the queue
 * engine (src/queue/engine.ts), claims those rows, has the analysis workers parse and authenticate
 * them, and stores each message's copies, thread and `message.received` event in the
 * transaction that deletes its row. So a crash at any moment between the 250 and that commit
 * leaves the row, analysed again after the restart, and never a copy twice. Like Postfix's queue
 * manager after its cleanup daemon: the reply waits for the disk, not for the CPU.
 *
 * While mail is arriving, the queue takes a small share of the event loop: each message it stores
 * (thread, event) costs the event loop about as much as accepting one, and the 250s
 * come first. It stores analysed messages in batches then, claims what keeps the analysis threads
 * at work, and catches up at full speed once the burst is over (InboundPace).
 *
 * Each claim counts the analysis before it starts and sets when the row is due again should its
 * outcome never come back; a restart makes every such row due at once (one process per data
 * dir: nothing else holds them). An analysis that fails (a worker stopped, its deadline passed) is
 * tried again later; one that cannot succeed (a message past the parser's limits) or whose tries
 * are spent is stored as it came, unanalysed, rather than lost.
 */
import type { App } from "../app";
import { Counts } from "../counts";
import { discard, type Reservation } from "../memory/in-flight";
import { releasePrepared, type PreparedContent } from "../messages/receive";
import { startQueue, type Claiming } from "../queue/engine";
import type { Queue } from "../queue/running";
import type { AcceptedInbound, Transaction } from "../store";
import type { AnalysisPool } from "./analysis-pool";
import type { Analysis } from "./analyze";
import { temporaryError } from "./analysis-protocol";
import { identityOf, logCopies, prepareCopies, storeCopies, type StoredCopy } from "./inbound-copies";
import { withoutForgedTraceFields } from "./trace";

/**
 * Messages claimed at once, and their bytes (in memory from claim to commit). 64 keeps the
 * analysis threads busy between two turns; the byte bound keeps a backlog of large messages from
 * holding hundreds of MB (at least one message is always claimed, whatever its size).
 */
const maxClaimed = 64;
const maxClaimedBytes = 32 * 1024 * 1024;
/**
 * A message up to this size is read in the transaction that claims it, so that its analysis starts
 * without waiting for a turn on the connection: read after the commit, each waited behind the next
 * turn's transaction, and the analysis threads ran dry while it stored a batch. Larger ones are
 * read after the commit, a chunk per turn of the event loop (store: acceptedInbound.source).
 */
const readWithClaimBytes = 64 * 1024;
/**
 * Analyses under way at once, per analysis thread: enough to overlap one's DNS waits with another's
 * parse, and for the thread to keep working while the event loop stores a batch. With 8 a lone
 * thread waited for a request about 12 % of the catch-up (samples of its state; busy 81-85 %
 * against 90-92 % with 16, 406-478 against 474-504 msg/s caught up, three pairs of runs). 20, of
 * which one peer may hold 16 (keptForOthers): with 12 of 16, the catch-up of one peer's burst
 * (bench/smtp-ingest/catch-up.ts) ran at 2,110-2,322 msg/s against 2,218-2,541.
 */
const analysesPerThread = 20;
/**
 * Shortest time between two looks past the rows of peers at their share. Such a look reads the
 * whole backlog of those peers (a burst of one sender: every row it has due) to find nothing
 * most of the time; made at every turn, it took the burst's acceptance from 2,904-3,177 to
 * 2,460-2,765 msg/s (bench/smtp-ingest/catch-up.ts, three alternating pairs); every 250 ms,
 * 2,855-3,659 against 2,895-3,022, all stored at 1,612-1,716 against 1,494-1,766 msg/s.
 */
const lookPastSharesEveryMs = 250;
/** Longest wait before analysed messages are stored, so that several share one commit. */
const batchWindowMs = 10;
/** Acceptances wake the queue (app.queues), so a longer sleep only delays a retry that no wake announced. */
const idleMs = 5_000;
/** Analyses of one message before it is stored unanalysed; each after a longer wait. */
const retryDelaysMs = [60_000, 5 * 60_000, 30 * 60_000, 2 * 60 * 60_000];
const maxAttempts = retryDelaysMs.length + 1;

/** Whether SMTP sessions are handing in messages right now: what the queue gives way to; and from whom. */
export class InboundPace {
  private lastAcceptedAt = -Infinity;
  private acceptedFrom = new Set<string>();
  /** An acceptance counts as recent for this long. */
  private static readonly busyForMs = 100;

  accepted(peer: string): void {
    this.lastAcceptedAt = performance.now();
    this.acceptedFrom.add(peer);
  }

  /** The peers whose mail was accepted since the last call. */
  takeAcceptedFrom(): Set<string> {
    const peers = this.acceptedFrom;
    this.acceptedFrom = new Set();
    return peers;
  }

  busy(): boolean {
    return performance.now() - this.lastAcceptedAt < InboundPace.busyForMs;
  }
}

/** A claimed row, its client's peer group, and its message when the claim read it (readWithClaimBytes). */
interface Claimed {
  claim: AcceptedInbound;
  peer: string;
  source?: Buffer;
}

interface Finished {
  claim: AcceptedInbound;
  /** Analysed (or given up on: stored as it came) and its copies prepared; absent: tried again later. */
  analysed?: { analysis: Analysis; prepared: PreparedContent };
}

export function startInboundQueue(app: App, analysis: AnalysisPool, analysisThreads: number, pace: InboundPace): Queue {
  const { store, clock, log } = app;
  const concurrency = Math.max(1, analysisThreads) * analysesPerThread;
  /**
   * Claimed at most while mail arrives (InboundPace.busy): the threads' analyses, and half as many
   * again to start as soon as one ends. An analysed message stays claimed until the turn that
   * stores it, up to batchWindowMs later; with 8 claimed in all, a lone thread stood idle much of
   * a burst (busy 53-57 % of it, the machine 15-20 % idle) and most of the burst's mail waited
   * for the catch-up. The threads' low priority keeps this from slowing the 250s: see
   * docs/benchmarks.md, "Analysis through the burst".
   */
  const claimedWhileBusy = concurrency + concurrency / 2;
  /** Claimed at most once mail stops arriving: the catch-up's depth, and never less than while it arrives (several threads). */
  const claimedAtRest = Math.max(maxClaimed, claimedWhileBusy);
  /**
   * Analyses and claims that one peer (src/net/peer-group.ts) can never take from the others. A
   * sender whose name servers answer slowly holds each of its analyses for up to the DNS budget
   * (src/smtp/dns-budget.ts); a burst of its mail, claimed and started in order, filled every
   * analysis and delayed everyone's mail by that budget for each round of it. A peer alone
   * still has most of them: the rest would stand idle while it sends a burst.
   */
  const keptForOthers = Math.max(1, Math.floor(concurrency / 5));
  /** Claimed and committed, waiting for an analysis slot, oldest first. */
  let waiting: Claimed[] = [];
  /** Every row claimed whose outcome is not recorded yet, its bytes and its peer. */
  const held = new Map<number, { bytes: number; peer: string }>();
  let heldBytes = 0;
  const heldByPeer = new Counts();
  const runningByPeer = new Counts();
  /**
   * Each claimed message's bytes in the message memory budget (INBOXD_MESSAGE_MEMORY_MB) from its
   * claim to its commit, as SMTP held them before its 250: while analyses hold the budget, new
   * mail is told to try later (452) rather than the process growing past it.
   */
  const reservations = new Map<number, Reservation>();
  let running = 0;
  let lookedPastSharesAt = -Infinity;

  async function turn(finished: Finished[], now: number, claiming: Claiming) {
    // Woken by acceptances with nothing to record and no room to claim (mail is arriving), or
    // none for their peers (a burst from one peer past its share): no transaction. A turn with no
    // acceptance since the last (a row fell due, another node's wake-up) always looks. Every
    // acceptance still wakes the queue, which records the outcomes back so far at once: with no
    // wake for a peer at its share, the batch window held their claims, and the analysis thread
    // waited through much of a burst (catch-up.ts: 7,700-8,100 of 10,000 left at the burst's end
    // against 5,000-6,800).
    const acceptedFrom = pace.takeAcceptedFrom();
    const onlyPeersAtShare = acceptedFrom.size > 0 && [...acceptedFrom].every((peer) => heldByPeer.get(peer) >= peerClaimShare());
    if (finished.length === 0 && (claiming === "none" || held.size >= claimLimit() || onlyPeersAtShare)) return;
    // Not waiting for the disk (TransactionOptions.waitForDisk): each message's row was on disk
    // before its 250, and goes in the transaction that stores its copies, so a power loss that
    // took this commit back would leave the row to be analysed again, never a message lost or
    // doubled; and what follows this commit (the webhooks' claims, the next acceptances, the sync
    // before the event streams are shown its events: src/store/sqlite/event-watermark.ts) syncs it.
    // So the analysis runs at the speed of the CPU, not of one fsync per turn.
    const { claims, stored } = await store.transaction(async (tx) => {
      await tx.events.holdOrder(finished.flatMap((outcome) => (outcome.analysed ? outcome.claim.envelope.recipients.map((recipient) => recipient.organizationId) : [])));
      const stored: { finished: Finished; copies: StoredCopy[] }[] = [];
      for (const outcome of finished) {
        const copies = outcome.analysed && (await recordAnalysed(tx, outcome.claim, outcome.analysed));
        if (copies) stored.push({ finished: outcome, copies });
        else await tx.acceptedInbound.unclaim(outcome.claim.id);
      }
      return { claims: claiming === "none" ? [] : await claimDue(tx, now, finished), stored };
    }, { waitForDisk: false }).catch((error: unknown) => {
      releaseUnheldReservations();
      throw error;
    });
    for (const { finished, copies } of stored) logCopies(app, finished.claim.envelope, finished.analysed!.analysis, copies);
    for (const { claim, analysed } of finished) {
      if (analysed) {
        await releasePrepared(app, analysed.prepared);
        // Stored, or to be analysed again from the database: the message and its decoded
        // attachments are freed here, which spares the collection its release would cause.
        discard([analysed.analysis.raw, ...analysed.analysis.parsed.attachments.map((attachment) => attachment.content)]);
      }
      unhold(claim.id, { collect: !analysed });
    }
    for (const claimed of claims) hold(claimed);
    waiting = waiting.concat(claims);
  }

  /** Stores the copies and deletes the row, in a savepoint of its own: a failure leaves the row for its next try, and the rest of the turn commits. */
  async function recordAnalysed(tx: Transaction, claim: AcceptedInbound, { analysis, prepared }: NonNullable<Finished["analysed"]>): Promise<StoredCopy[] | undefined> {
    try {
      return await tx.transaction(async (tx) => {
        const copies = await storeCopies(app, tx, claim.envelope, analysis, prepared);
        await tx.acceptedInbound.finish(claim.id);
        return copies;
      });
    } catch (error) {
      log.error("inbound queue: storing an analysed message failed; it is analysed again later", { transaction: claim.envelope.transaction, attempts: claim.attempts, error });
      return undefined;
    }
  }

  /**
   * Claimed at most now. Once mail arrives again, the lower limit never takes the room kept for
   * others: one peer may hold more than that limit from the catch-up before (a peer's share at rest).
   */
  const claimLimit = () => (pace.busy() ? Math.min(claimedAtRest, Math.max(claimedWhileBusy, heldByPeer.most() + keptForOthers)) : claimedAtRest);
  /** Claimed at most now by one peer. */
  const peerClaimShare = () => (pace.busy() ? claimedWhileBusy : claimedAtRest) - keptForOthers;

  /**
   * Claims due rows up to the limits, each analysis counted before it starts. The rows whose
   * outcomes this turn records leave room for others: counted as held, a turn that recorded every
   * claim could claim none, and with no analysis left to call the next turn, the queue slept until
   * its idle timeout with rows due (5 s after every burst's end, half of it lost).
   */
  async function claimDue(tx: Transaction, now: number, recorded: Finished[]): Promise<Claimed[]> {
    let count = held.size - recorded.length;
    let bytes = recorded.reduce((sum, { claim }) => sum - held.get(claim.id)!.bytes, heldBytes);
    const byPeer = heldByPeer.copy();
    for (const { claim } of recorded) byPeer.decrement(held.get(claim.id)!.peer);
    const peerShare = peerClaimShare();
    const claims: Claimed[] = [];
    // Rows of a peer that reaches its share on the way are passed over, and the next look leaves
    // that peer out: the rows of others behind a long backlog of one peer's are found all the same
    // (within lookPastSharesEveryMs).
    for (let lookAgain = true; lookAgain; ) {
      lookAgain = false;
      const free = claimLimit() - count;
      if (free <= 0) break;
      const claimedBefore = claims.length;
      for (const { id, size, attempts, peer } of await tx.acceptedInbound.due(now, { ids: [...held.keys()], peers: byPeer.atLimit(() => peerShare) }, free)) {
        if (byPeer.get(peer) >= peerShare) {
          // Its peer reached the share in this look (the look left out those at it before): worth another only then.
          if (claims.length > claimedBefore && performance.now() - lookedPastSharesAt >= lookPastSharesEveryMs) {
            lookAgain = true;
            lookedPastSharesAt = performance.now();
          }
          continue;
        }
        if (bytes + size > maxClaimedBytes && count > 0) return claims;
        const reservation = app.messageMemory.open();
        if (!reservation.cover(size)) return claims;
        reservations.set(id, reservation);
        const retryAt = now + retryDelaysMs[Math.min(attempts, retryDelaysMs.length - 1)]!;
        const claim = await tx.acceptedInbound.claim(id, retryAt);
        if (!claim) {
          reservations.get(id)!.release();
          reservations.delete(id);
          continue;
        }
        // Claimed, it is due again only at retryAt: the next look does not find it.
        claims.push({ claim, peer, source: size <= readWithClaimBytes ? await tx.acceptedInbound.source(id) : undefined });
        byPeer.increment(peer);
        bytes += size;
        count++;
      }
    }
    return claims;
  }

  function hold({ claim, peer }: Claimed) {
    held.set(claim.id, { bytes: claim.size, peer });
    heldBytes += claim.size;
    heldByPeer.increment(peer);
  }

  function unhold(id: number, release?: { collect: boolean }) {
    const holding = held.get(id);
    if (holding) {
      heldBytes -= holding.bytes;
      heldByPeer.decrement(holding.peer);
    }
    held.delete(id);
    reservations.get(id)?.release(release);
    reservations.delete(id);
  }

  /** After a turn that failed: the reservations of its claims, which rolled back with it. */
  function releaseUnheldReservations() {
    for (const [id, reservation] of reservations) {
      if (held.has(id)) continue;
      reservation.release();
      reservations.delete(id);
    }
  }

  /** Starts the oldest waiting analyses, but none past its peer's share (keptForOthers). */
  function startTries(): Promise<Finished>[] {
    const started: Promise<Finished>[] = [];
    const peerShare = concurrency - keptForOthers;
    const passedOver: Claimed[] = [];
    for (const claimed of waiting) {
      if (running === concurrency || runningByPeer.get(claimed.peer) >= peerShare) {
        passedOver.push(claimed);
        continue;
      }
      running++;
      runningByPeer.increment(claimed.peer);
      started.push(
        analyseOne(claimed).finally(() => {
          running--;
          runningByPeer.decrement(claimed.peer);
        }),
      );
    }
    waiting = passedOver;
    return started;
  }

  /** Never rejects: a failure is an outcome (analysed again later, or stored unanalysed). */
  async function analyseOne({ claim, source }: Claimed): Promise<Finished> {
    const { envelope } = claim;
    // A large message is read after the claim's commit, so that its read holds neither the
    // connection nor the event loop in one piece.
    const analyse = async (bytes?: Buffer) => analysis.analyze(bytes ?? (await acceptedSource(claim)), identityOf(envelope));
    let analysed: Analysis;
    try {
      // Tries spent, each analysed and then not stored (a value its database refused): stored as
      // it came, with none of the fields read from it. A message with a Message-ID PostgreSQL's
      // index refused was tried again every 2 hours, for ever.
      if (claim.attempts > maxAttempts) throw new Error("analysed at each try, and never stored");
      // Lost with its thread, replaced for another message's deadline: not this message's doing,
      // so tried once more at once, its bytes read again (the first try took them over), rather
      // than failed with the culprit and delayed a minute.
      analysed = await analyse(source).catch((error: Error) => {
        if (error.name !== "WorkerReplacedError") throw error;
        return analyse();
      });
    } catch (error) {
      const hopeless = (error as Error).name === "MessageLimitError" || claim.attempts >= maxAttempts;
      log.warn(hopeless ? "inbound message could not be analysed; stored as it came" : "inbound message not analysed; tried again later", { transaction: envelope.transaction, attempts: claim.attempts, error: (error as Error).message });
      if (!hopeless) return { claim };
      try {
        analysed = await unanalysed(claim);
      } catch (error) {
        log.error("inbound queue: reading an accepted message failed", { transaction: envelope.transaction, error });
        return { claim };
      }
    }
    try {
      return { claim, analysed: { analysis: analysed, prepared: await prepareCopies(app, envelope, analysed, claim) } };
    } catch (error) {
      log.error("inbound queue: writing an analysed message's large parts failed; it is analysed again later", { transaction: envelope.transaction, error });
      return { claim };
    }
  }

  /**
   * A message stored as it came: its source whole (the analysis took the claim's bytes), its
   * sender from MAIL FROM, no fields read from it, and temperror for each authentication method.
   */
  async function unanalysed(claim: AcceptedInbound): Promise<Analysis> {
    const source = await acceptedSource(claim);
    const { mailFrom } = claim.envelope;
    return {
      parsed: { from: mailFrom || undefined, to: [], cc: [], references: [], subject: "", attachments: [] },
      raw: withoutForgedTraceFields(source, app.config.hostname),
      ...temporaryError(app.config.hostname),
    };
  }

  async function acceptedSource(claim: AcceptedInbound): Promise<Buffer> {
    const source = await store.acceptedInbound.source(claim.id);
    if (!source) throw new Error(`accepted message ${claim.id} is gone`);
    return source;
  }

  /** Claimed but never started (the queue stopped): due again now, the analysis not counted. */
  async function releaseWaiting() {
    const unstarted = waiting;
    waiting = [];
    const now = clock.now();
    await store.transaction(async (tx) => {
      for (const { claim } of unstarted) await tx.acceptedInbound.release(claim.id, now);
    });
    for (const { claim } of unstarted) unhold(claim.id);
  }

  return startQueue<Finished>(app, "inbound", {
    batchWindowMs,
    idleMs,
    resume: () => store.acceptedInbound.resume(clock.now()),
    turn,
    startTries,
    // At once when the analyses are about to run dry; otherwise several messages share the turn's commit.
    recordAtOnce: (outcomesBack) => !pace.busy() && (waiting.length < concurrency || outcomesBack >= maxClaimed / 2),
    nextDueAfter: (after) => store.acceptedInbound.nextDueAfter(after),
    release: releaseWaiting,
  });
}
