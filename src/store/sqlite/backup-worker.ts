/** The backup's thread: one `VACUUM INTO`, so that the main thread can report its progress meanwhile. */
import { Database } from "bun:sqlite";
import type { BackupReply, BackupRequest } from "./backup";

declare const self: Worker;

self.onmessage = ({ data: request }: MessageEvent<BackupRequest>) => {
  let reply: BackupReply;
  try {
    const sqlite = new Database(request.source, { readonly: true });
    try {
      // A read transaction of its own: the copy is the database as of its start, while the
      // server's writer goes on (WAL readers never block it, nor it them).
      sqlite.query("VACUUM INTO ?").run(request.target);
    } finally {
      sqlite.close();
    }
    reply = { done: true };
  } catch (error) {
    reply = { error: (error as Error).message };
  }
  self.postMessage(reply);
};
