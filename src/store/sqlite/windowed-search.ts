/**
 * The search of the embedded engine as the Store offers it (MessageSearchStore), from the
 * statements of ./message-search.ts. The FTS5 index holds every inbox's messages, and a statement
 * that looks for one inbox's matches reads the other inboxes' matches in its range as well (about
 * 0.5 µs each): a word common in other organizations' mail held the event loop for as long as
 * their matches took, whatever the inbox searched (100,000 of them: 45 ms a search, and 20
 * searches at once kept /health waiting 0.74 s). So the index is read in windows of rowids, newest
 * first, with a turn of the event loop between two: a search holds the server for one window at most.
 */
import { takeTurn } from "../../event-loop";
import type { MessageSearchStore, SearchPosition } from "../store";
import { walkStepOf } from "../walk-step";
import { ftsQuery } from "./fts-query";
import type { messageSearchStore, Position, RowidWindow } from "./message-search";

/** Rowids one statement covers: at most about 8 ms of other inboxes' matches. */
export const SEARCH_WINDOW_ROWIDS = 16_384;

type Statements = ReturnType<typeof messageSearchStore>;
type Run = <T>(statements: () => T) => Promise<T>;

/**
 * The rows of windows from `before` down, read by `read` (given the window and how many rows are
 * still wanted), until there are `wanted` or the first message is passed.
 */
async function readWindows<Row>(before: number, wanted: number, read: (window: RowidWindow, limit: number) => Promise<Row[]>): Promise<Row[]> {
  const rows: Row[] = [];
  for (let end = before; end > 0 && rows.length < wanted; end -= SEARCH_WINDOW_ROWIDS) {
    if (end !== before) await takeTurn();
    rows.push(...(await read({ lowest: Math.max(0, end - SEARCH_WINDOW_ROWIDS), before: end }, wanted - rows.length)));
  }
  return rows;
}

/** `caughtUp`: indexes what waits for the index, so that a search sees every message committed before it. */
export function windowedSearch(statements: Statements, run: Run, caughtUp: () => Promise<void>): MessageSearchStore {
  return {
    minimumLiteralLength: statements.minimumLiteralLength,
    longestPhrase: statements.longestPhrase,
    foldsAsRe2: statements.foldsAsRe2,
    unindexed: () => run(() => statements.unindexed()),
    summaries: (messageIds) => run(() => statements.summaries(messageIds)),
    async containing(inboxId, text, page, per, extra = 0, label) {
      await caughtUp();
      const ids = await readWindows(await run(() => statements.rowidEnd()), page * per + extra, (window, limit) => run(() => statements.containingIn(inboxId, text, window, limit, label)));
      return run(() => statements.summaries(ids.slice((page - 1) * per)));
    },
    async walk(inboxId, requirement, after, limit, label) {
      // A walk without a literal the index can look up reads the inbox's own messages.
      const match = requirement && ftsQuery(requirement);
      if (!match) return walkStepOf(await run(() => statements.scan(inboxId, after, limit, label)), limit);
      // One window per read: the walk takes its turns between reads, so its budget counts only its own statements.
      const before = after === undefined ? await run(() => statements.rowidEnd()) : (after as unknown as Position).rowid;
      const window = { lowest: Math.max(0, before - SEARCH_WINDOW_ROWIDS), before };
      const step = walkStepOf(await run(() => statements.candidatesIn(inboxId, match, window, limit, label)), limit);
      // A window read whole: the walk goes on below it, down to the first message.
      return step.next || window.lowest === 0 ? step : { rows: step.rows, next: below(window) };
    },
    catchUp: caughtUp,
  };
}

/** Where an index walk goes on once it has read a window whole; such a walk reads only the rowid. */
const below = (window: RowidWindow): SearchPosition => ({ createdAt: 0, rowid: window.lowest }) satisfies Position as unknown as SearchPosition;

