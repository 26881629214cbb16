// Entry point of the checkpoint thread (./checkpoints): copies the WAL into the database file with
// a connection of its own, when asked, so that the event loop's connection never stops for it.
import type { Database } from "bun:sqlite";
import { serveRequests } from "../../workers/serve";
import type { CheckpointProtocol } from "./checkpoints";
import { checkpointWal, openCheckpointConnection } from "./open";

let sqlite: Database;

serveRequests<CheckpointProtocol>({
  setup({ dataDir }) {
    sqlite = openCheckpointConnection(dataDir);
  },
  handle(request) {
    if (request === "close") sqlite.close();
    else checkpointWal(sqlite, request === "checkpoint at rest");
  },
});
