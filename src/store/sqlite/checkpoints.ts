/**
 * WAL checkpoints off the event loop. A checkpoint copies the WAL's pages into the database file
 * between two fsyncs; SQLite runs one inside whichever commit takes the WAL past 1000 pages, and
 * on the event loop's one connection that stopped every SMTP session and request for up to a few
 * hundred milliseconds. While inboxd serves, a worker thread with its own connection checkpoints
 * instead (./checkpoint-worker) and commits on the event loop do none. A thread that stops is
 * replaced, as in every pool (../../workers/pool); should none load, commits checkpoint again.
 * The thread starts with the first write and stops once nothing was written for a while: its
 * heap is about 4 MB of an idle server's resident memory. At that moment the event loop's
 * connection also gives back its page cache (INBOXD_DB_CACHE_MB), which the start's reads of a
 * large database or a burst of mail had filled: resident memory of a server at rest, which the
 * next reads fill again from the system's file cache as they need.
 */
import type { Database } from "bun:sqlite";
import { recurringFailureLog, type Logger } from "../../log";
import type { RunningPart } from "../../running-part";
import { startWorkerPool, type WorkerPool } from "../../workers/pool";
import { workerUrl } from "../../workers/url";
import { setCheckpointOnCommit } from "./open";

export interface CheckpointProtocol {
  setup: { dataDir: string };
  /**
   * "checkpoint at rest": nothing was written for WRITER_REST_MS, so a WAL grown large may be
   * emptied (./open checkpointWal). "close": the thread's connection closes, before the server's:
   * the last one to close removes the WAL.
   */
  request: "checkpoint" | "checkpoint at rest" | "close";
  reply: void;
}

/** How often the thread copies what the WAL gathered; when nothing was written, it finds nothing to do. */
const INTERVAL_MS = 250;
/** How long stopping waits for a checkpoint in progress. */
const STOP_TIMEOUT_MS = 5000;
/** How long the thread stays after the last write (the next write starts it again). */
const IDLE_THREAD_MS = 10_000;
/** How long after the last write the writer counts as resting. */
const WRITER_REST_MS = 1000;

export interface Checkpoints extends RunningPart {
  /** Whether the thread runs now: it starts with a write and stops once idle. */
  threadRunning(): boolean;
}

export function startCheckpoints(sqlite: Database, dataDir: string, log: Logger, options: { idleThreadMs?: number } = {}): Checkpoints {
  const idleThreadMs = options.idleThreadMs ?? IDLE_THREAD_MS;
  let threads: WorkerPool<CheckpointProtocol> | undefined;
  let running = true;
  let next: Timer | undefined;
  let current: Promise<void> | undefined;
  // Rows this connection inserted, updated or deleted since it opened, triggers' included: every
  // write of the server is on this connection, so a count that moved means a WAL to copy. Unknown
  // at first: the first turn copies whatever the start left in the WAL, schema changes included,
  // which count no row.
  const totalChanges = sqlite.query<{ changes: number }, []>("SELECT total_changes() AS changes");
  let changesSeen = -1;
  let lastWriteAt = performance.now();
  setCheckpointOnCommit(sqlite, false);
  // Where no thread can load, commits checkpoint the WAL themselves again.
  const checkpointOnCommit = async () => {
    running = false;
    setCheckpointOnCommit(sqlite, true);
  };
  const onThread = (request: CheckpointProtocol["request"]) => {
    threads ??= startWorkerPool<CheckpointProtocol>({ name: "wal checkpoint", url: workerUrl("store/sqlite/checkpoint-worker.ts"), threads: 1, setup: { dataDir }, log });
    return threads.run({ message: () => request, here: request === "close" ? async () => {} : checkpointOnCommit });
  };
  /** The thread's connection closes before the thread ends, waited for at most STOP_TIMEOUT_MS. */
  const stopThread = async () => {
    if (!threads) return;
    // Until the thread has closed its connection, this timer keeps the process alive: shutdown waits for it.
    let timeout: Timer | undefined;
    const closed = onThread("close").catch((error: Error) => log.warn("wal checkpoint thread did not close its connection", { error: error.message }));
    await Promise.race([closed, new Promise((resolve) => (timeout = setTimeout(resolve, STOP_TIMEOUT_MS)))]);
    clearTimeout(timeout);
    threads.close();
    threads = undefined;
  };
  /** Whether it checkpointed: at rest, it has nothing to do, which says nothing of whether a checkpoint would work. */
  const turn = async (): Promise<boolean> => {
    const { changes } = totalChanges.get()!;
    if (changes !== changesSeen) {
      changesSeen = changes;
      lastWriteAt = performance.now();
    }
    // Every turn until idleThreadMs after the last write checkpoints (one that a reader held back
    // is made again at the next); then the thread stops until the next write.
    const sinceWrite = performance.now() - lastWriteAt;
    if (sinceWrite < idleThreadMs) {
      await onThread(sinceWrite < WRITER_REST_MS ? "checkpoint" : "checkpoint at rest");
      return true;
    }
    if (threads) {
      await stopThread();
      sqlite.exec("PRAGMA shrink_memory");
    }
    return false;
  };
  const failures = recurringFailureLog(log, "warn", "wal checkpoint failed");
  const schedule = () => {
    current = turn()
      .then(
        (checkpointed) => {
          if (checkpointed) failures.succeeded();
        },
        (error: Error) => failures.failed({ error: error.message }),
      )
      // The server's listeners keep the process alive; this timer never does by itself.
      .finally(() => {
        if (running) next = setTimeout(schedule, INTERVAL_MS).unref();
      });
  };
  schedule();
  return {
    name: "wal-checkpoints",
    threadRunning: () => threads !== undefined,
    async stop() {
      running = false;
      clearTimeout(next);
      await current;
      setCheckpointOnCommit(sqlite, true);
      await stopThread();
    },
  };
}
