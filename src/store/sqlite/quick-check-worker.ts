// Entry point of the start's quick_check thread (./open): its finding goes to shared memory, for a
// start that waits, and as a message, for one that did not.
import { Database } from "bun:sqlite";

declare const self: Worker;

export type QuickCheckRequest = { path: string; shared: SharedArrayBuffer };

self.onmessage = ({ data: { path, shared } }: MessageEvent<QuickCheckRequest>) => {
  let finding: string;
  try {
    const sqlite = new Database(path, { readonly: true });
    try {
      finding = sqlite.query<{ quick_check: string }, []>("PRAGMA quick_check(1)").get()!.quick_check;
    } finally {
      sqlite.close();
    }
  } catch (error) {
    finding = (error as Error).message;
  }
  const bytes = new TextEncoder().encode(finding).subarray(0, shared.byteLength - 8);
  new Uint8Array(shared, 8).set(bytes);
  const done = new Int32Array(shared, 0, 2);
  done[1] = bytes.length;
  Atomics.store(done, 0, 1);
  Atomics.notify(done, 0);
  self.postMessage(finding);
};
