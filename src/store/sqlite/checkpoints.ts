/**
 * WAL checkpoints off the event loop. A checkpoint copies the WAL's pages into the database file
 * between two fsyncs; SQLite runs one inside whichever commit takes the WAL past 1000 pages, and
 * on the event loop's one connection that stopped every SMTP session and request for up to a few
 * hundred milliseconds. While inboxd serves, a worker thread with its own connection checkpoints
 * instead (./checkpoint-worker) and commits on the event loop do none. A thread that stops is
 * replaced, as in every pool (../../workers/pool); should none load, commits checkpoint again.
 */
import type { Database } from "bun:sqlite";
import type { Logger } from "../../log";
import type { RunningPart } from "../../running-part";
import { startWorkerPool } from "../../workers/pool";
import { workerUrl } from "../../workers/url";
import { setCheckpointOnCommit } from "./open";

export interface CheckpointProtocol {
  setup: { dataDir: string };
  /** "close": the thread's connection closes, before the server's: the last one to close removes the WAL. */
  request: "checkpoint" | "close";
  reply: void;
}

/** How often the thread copies what the WAL gathered; when nothing was written, it finds nothing to do. */
const INTERVAL_MS = 250;
/** How long stopping waits for a checkpoint in progress. */
const STOP_TIMEOUT_MS = 5000;

export function startCheckpoints(sqlite: Database, dataDir: string, log: Logger): RunningPart {
  const threads = startWorkerPool<CheckpointProtocol>({ name: "wal checkpoint", url: workerUrl("store/sqlite/checkpoint-worker.ts"), threads: 1, setup: { dataDir }, log });
  let running = true;
  let next: Timer | undefined;
  setCheckpointOnCommit(sqlite, false);
  // Where no thread can load, commits checkpoint the WAL themselves again.
  const checkpointOnCommit = async () => {
    running = false;
    setCheckpointOnCommit(sqlite, true);
  };
  const checkpoint = () =>
    threads
      .run({ message: () => "checkpoint", here: checkpointOnCommit })
      .catch((error: Error) => log.warn("wal checkpoint failed", { error: error.message }))
      // The server's listeners keep the process alive; this timer never does by itself.
      .finally(() => {
        if (running) next = setTimeout(checkpoint, INTERVAL_MS).unref();
      });
  checkpoint();
  return {
    name: "wal-checkpoints",
    async stop() {
      running = false;
      clearTimeout(next);
      setCheckpointOnCommit(sqlite, true);
      // Until the thread has closed its connection, this timer keeps the process alive: shutdown waits for it.
      let timeout: Timer | undefined;
      const closed = threads.run({ message: () => "close", here: async () => {} }).catch((error: Error) => log.warn("wal checkpoint thread did not close its connection", { error: error.message }));
      await Promise.race([closed, new Promise((resolve) => (timeout = setTimeout(resolve, STOP_TIMEOUT_MS)))]);
      clearTimeout(timeout);
      threads.close();
    },
  };
}
