// Entry point of the checkpoint thread (./checkpoints): copies the WAL into the database file with
// a connection of its own, on a timer, so that the event loop's connection never stops for it.
import type { Database } from "bun:sqlite";
import type { CheckpointReply, CheckpointRequest } from "./checkpoints";
import { checkpointWal, openCheckpointConnection } from "./open";

declare const self: Worker;

let sqlite: Database | undefined;
let timer: ReturnType<typeof setInterval> | undefined;

self.onmessage = ({ data: request }: MessageEvent<CheckpointRequest>) => {
  if (request.type === "stop") {
    clearInterval(timer);
    sqlite?.close();
    self.postMessage({ stopped: true } satisfies CheckpointReply);
    return;
  }
  sqlite = openCheckpointConnection(request.dataDir);
  const connection = sqlite;
  timer = setInterval(() => {
    try {
      checkpointWal(connection);
    } catch (error) {
      self.postMessage({ error: (error as Error).message } satisfies CheckpointReply);
    }
  }, request.intervalMs);
  self.postMessage({ ready: true } satisfies CheckpointReply);
};
