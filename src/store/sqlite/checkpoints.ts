/**
 * WAL checkpoints off the event loop. A checkpoint copies the WAL's pages into the database file
 * between two fsyncs; SQLite runs one inside whichever commit takes the WAL past 1000 pages, and
 * on the event loop's one connection that stopped every SMTP session and request for up to a few
 * hundred milliseconds. While inboxd serves, a worker thread with its own connection checkpoints
 * instead (./checkpoint-worker) and commits on the event loop do none. Should the thread fail,
 * commits checkpoint again as before.
 */
import type { App } from "../../app";
import type { RunningPart } from "../../serve";
import { setCheckpointOnCommit } from "./open";

export type CheckpointRequest = { type: "start"; dataDir: string; intervalMs: number } | { type: "stop" };
export type CheckpointReply = { ready: true } | { stopped: true } | { error: string };

/** How often the thread copies what the WAL gathered; when nothing was written, it finds nothing to do. */
const INTERVAL_MS = 250;
/** How long stopping waits for a checkpoint in progress. */
const STOP_TIMEOUT_MS = 5000;

// In the single executable every module has the executable's URL, and the worker, a second
// entry point of `bun build --compile` (package.json), sits at its path below src/.
const workerUrl = import.meta.path.startsWith("/$bunfs/") ? new URL("./store/sqlite/checkpoint-worker.ts", import.meta.url) : new URL("./checkpoint-worker.ts", import.meta.url);

export function startCheckpoints(app: App): RunningPart {
  const { sqlite } = app.store;
  let running = true;
  let onStopped = () => {};
  const worker = new Worker(workerUrl);
  // The server's listeners keep the process alive; this thread never does by itself.
  worker.unref();
  const fallBack = (reason: string) => {
    if (!running) return;
    running = false;
    setCheckpointOnCommit(sqlite, true);
    app.log.error("wal checkpoint thread stopped; commits checkpoint the WAL themselves", { reason });
  };
  worker.onmessage = ({ data: reply }: MessageEvent<CheckpointReply>) => {
    if ("ready" in reply) {
      if (running) setCheckpointOnCommit(sqlite, false);
    } else if ("stopped" in reply) onStopped();
    else app.log.warn("wal checkpoint failed", { error: reply.error });
  };
  worker.onerror = (event) => fallBack(event.message);
  worker.addEventListener("close", () => {
    fallBack("exited");
    onStopped();
  });
  worker.postMessage({ type: "start", dataDir: app.config.dataDir, intervalMs: INTERVAL_MS } satisfies CheckpointRequest);
  return {
    name: "wal-checkpoints",
    async stop() {
      if (running) {
        running = false;
        setCheckpointOnCommit(sqlite, true);
        // The thread closes its connection first: the last one to close removes the WAL.
        const stopped = new Promise<void>((resolve) => (onStopped = resolve));
        // Until it answers, the thread keeps the process alive: shutdown waits for it.
        worker.ref();
        worker.postMessage({ type: "stop" } satisfies CheckpointRequest);
        await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, STOP_TIMEOUT_MS).unref())]);
      }
      worker.terminate();
    },
  };
}
