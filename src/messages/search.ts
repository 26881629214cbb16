/**
 * `query` on the message list (contract.md "Lists"). A plain word or phrase is a case-insensitive
 * substring of subject, text or sender, answered by the FTS5 trigram index. `/pattern/flags` is a
 * regular expression in RE2 syntax, run by re2js (linear time, no backtracking), over candidates
 * from the same index when the pattern holds a literal of 3+ characters, else over the inbox newest
 * first; either walk stops at a time budget and answers 422 rather than hold the server.
 */
import { RE2JS } from "re2js";
import { invalid } from "../errors";
import type { Store } from "../store";
import type { SearchableRow } from "../store/message-search";
import type { MessageSummaryRow } from "../store/messages";
import { candidateQuery, ftsPhrase, minimumLiteralLength } from "./regex-literals";

/** Longest pattern accepted: RE2 compiles in time linear in the pattern, but the program still grows. */
export const maxPatternLength = 256;
/** Rows read per step of a walk: a first page needs few; a selective pattern soon reads more at once. */
const firstBatch = 40;
const maxBatch = 1000;

const REGEX_QUERY = /^\/(.+)\/([a-z]*)$/s;
const flagBits: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, g: 0, u: 0 };

export interface SearchOptions {
  query: string;
  page: number;
  per: number;
  /** Wall time the regular-expression walk may take (INBOXD_SEARCH_BUDGET_MS). */
  budgetMs: number;
}

export function searchMessages(store: Store, inboxId: string, options: SearchOptions): MessageSummaryRow[] {
  const phrase = options.query.trim();
  const regex = REGEX_QUERY.exec(phrase);
  if (regex) return regexSearch(store, inboxId, compile(regex[1]!, regex[2]!), candidateQuery(regex[1]!), options);
  if ([...phrase].length >= minimumLiteralLength) return store.messageSearch.matchingPage(inboxId, ftsPhrase(phrase), options.page, options.per);
  // One or two characters are below the trigram index: the same walk as a pattern without a literal.
  return regexSearch(store, inboxId, RE2JS.compile(RE2JS.quote(phrase), RE2JS.CASE_INSENSITIVE), null, options);
}

function compile(pattern: string, flags: string): RE2JS {
  if (pattern.length > maxPatternLength) throw invalid(`query: a regular expression may be at most ${maxPatternLength} characters`);
  let bits = 0;
  for (const flag of flags) {
    if (!(flag in flagBits)) throw invalid(`query: unknown regular expression flag '${flag}' (known: i, m, s; g and u change nothing)`);
    bits |= flagBits[flag]!;
  }
  try {
    return RE2JS.compile(pattern, bits);
  } catch (e) {
    throw invalid(`query: invalid regular expression: ${(e as Error).message}`);
  }
}

const matchesRow = (regex: RE2JS, row: SearchableRow) => regex.test(row.subject) || regex.test(row.from) || (row.text !== null && regex.test(row.text));

/**
 * Walks candidates newest first (the index's matches for `match`, else every message of the
 * inbox), keeping those the expression matches, until the page is full, the inbox is done, or
 * the budget is spent (422: the caller cannot tell a partial page from the last one).
 */
function regexSearch(store: Store, inboxId: string, regex: RE2JS, match: string | null, { page, per, budgetMs }: SearchOptions): MessageSummaryRow[] {
  // performance.now, not the app clock: this bounds real CPU time, which tests never move.
  const deadline = performance.now() + budgetMs;
  let skip = (page - 1) * per;
  const found: number[] = [];
  let last: SearchableRow | undefined;
  for (let size = Math.min(maxBatch, Math.max(firstBatch, 2 * page * per)); ; size = Math.min(maxBatch, size * 2)) {
    const batch = match
      ? store.messageSearch.candidates(inboxId, match, last?.rowid ?? Number.MAX_SAFE_INTEGER, size)
      : store.messageSearch.scan(inboxId, last ?? { createdAt: Number.MAX_SAFE_INTEGER, rowid: 0 }, size);
    for (const row of batch) {
      if (matchesRow(regex, row)) {
        if (skip > 0) skip--;
        else found.push(row.rowid);
        if (found.length === per) return store.messageSearch.summaries(found);
      }
      if (performance.now() > deadline) {
        throw invalid(`query: the search took longer than its ${budgetMs} ms budget; narrow the pattern with a literal of ${minimumLiteralLength} or more characters`);
      }
    }
    if (batch.length < size) return store.messageSearch.summaries(found);
    last = batch[batch.length - 1];
  }
}
