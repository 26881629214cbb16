/**
 * The search index written in the background (./search-index.ts), while the server runs: a batch
 * of the messages noted for it every SEARCH_INDEX_INTERVAL_MS, which leaves the event loop to the
 * mail. That is about 6 % of the loop here and 256 messages a second, more than this 2-core
 * machine stores while it also receives mail; so after a burst the index trails the inbound
 * backlog rather than slowing it, and catches up after. Once more than SEARCH_INDEX_BEHIND
 * messages wait, the batches go back to back, a turn of the event loop each, so that the index
 * never trails without bound. A search does not wait for this: it indexes what is still noted
 * first (./index.ts).
 */
import { takeTurn } from "../../event-loop";
import type { Logger } from "../../log";
import type { RunningPart } from "../../running-part";

export interface SearchIndexing {
  /** An upper bound of the messages that wait for the index. */
  pendingAtMost(): Promise<number>;
  /** Indexes up to `limit` of them, those that wait longest, in a transaction of its own; how many. */
  indexBatch(limit: number): Promise<number>;
}

export const SEARCH_INDEX_INTERVAL_MS = 250;
/** FTS5 costs the event loop 230-290 µs per message of a few kB: a batch holds it for about 15 ms. */
export const SEARCH_INDEX_BATCH = 64;
export const SEARCH_INDEX_BEHIND = 10_000;

export function startSearchIndexing(index: SearchIndexing, log: Logger): RunningPart {
  let stopped = false;
  let run: Promise<void> | undefined;

  async function catchUp() {
    // A read first: a server at rest writes nothing.
    if ((await index.pendingAtMost()) === 0) return;
    while (!stopped && (await index.indexBatch(SEARCH_INDEX_BATCH)) === SEARCH_INDEX_BATCH && (await index.pendingAtMost()) > SEARCH_INDEX_BEHIND) await takeTurn();
  }

  const timer = setInterval(() => {
    if (run) return;
    run = catchUp()
      .catch((error) => log.error("search indexing failed; tried again shortly", { error }))
      .finally(() => (run = undefined));
  }, SEARCH_INDEX_INTERVAL_MS);

  return {
    name: "search-indexing",
    async stop() {
      stopped = true;
      clearInterval(timer);
      await run;
    },
  };
}
