/**
 * The search index written in the background (./search-index.ts), while the server runs: a batch
 * of the messages noted for it every SEARCH_INDEX_INTERVAL_MS, which leaves the event loop to the
 * mail. That is at most about 8 % of the loop and, for mail like bench/smtp-ingest's, 256
 * messages a second, more than this 2-core machine stores while it also receives mail; so after a
 * burst the index trails the inbound backlog rather than slowing it, and catches up after. Once
 * more than SEARCH_INDEX_BEHIND messages wait, the batches go back to back, a turn of the event
 * loop each, so that the index never trails without bound. A search does not wait for this: it
 * indexes what is still noted first (./index.ts).
 */
import { takeTurn } from "../../event-loop";
import type { Logger } from "../../log";
import { runEvery, type RunningPart, type Stopping } from "../../running-part";

export interface SearchIndexing {
  /** An upper bound of the messages that wait for the index. */
  pendingAtMost(): Promise<number>;
  /** Indexes a batch of them, those that wait longest, in a transaction of its own; how many. */
  indexBatch(): Promise<number>;
}

/** A batch (./search-index.ts) holds the event loop for up to about 20 ms. */
export const SEARCH_INDEX_INTERVAL_MS = 250;
export const SEARCH_INDEX_BEHIND = 10_000;

export function startSearchIndexing(index: SearchIndexing, log: Logger): RunningPart {
  async function catchUp(stopping: Stopping) {
    // A read first: a server at rest writes nothing.
    if ((await index.pendingAtMost()) === 0) return;
    while (!stopping() && (await index.indexBatch()) > 0 && (await index.pendingAtMost()) > SEARCH_INDEX_BEHIND) await takeTurn();
  }
  return runEvery("search-indexing", SEARCH_INDEX_INTERVAL_MS, catchUp, { log, event: "search indexing failed; tried again shortly" });
}
