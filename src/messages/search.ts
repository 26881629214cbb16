/**
 * `query` on the message list (docs/api.md "Lists"). A plain word or phrase is a case-insensitive
 * substring of subject, text or sender, answered by the store's trigram index. `/pattern/flags` is a
 * regular expression in RE2 syntax, run by re2js (linear time, no backtracking), over candidates
 * from the same index when the pattern holds a literal of 3+ characters, else over the inbox newest
 * first; either walk stops at a time budget and answers 422 rather than hold the server. Walks run
 * on the event loop in short slices, taking turns, and each organization may run only a few at once.
 */
import { RE2JS } from "re2js";
import { invalid, ServiceError } from "../errors";
import { takeTurn } from "../event-loop";
import { lookedAhead, type Listing, type Page } from "../page";
import type { MessageSummaryRecord } from "../store/records";
import type { LiteralRequirement, SearchableMessage, SearchPosition, Store } from "../store/store";
import { literalRequirement } from "./regex-literals";

/** Longest pattern accepted: RE2 compiles in time linear in the pattern, but the program still grows. */
export const maxPatternLength = 256;
/**
 * Largest compiled program accepted, in re2js's instructions. A test's time is linear in the text
 * but grows with the program, and past about 2,000 instructions re2js leaves its DFA for a slower
 * simulation: `(\pL|\s){999}Z` (3,000) took 2.6 s over 64 KiB of prose, held in one call that
 * no slice interrupts; 1,000 instructions take at most about 30 ms there.
 */
const maxProgramSize = 1000;

/** Rows read per step of a walk: a first page needs few; a selective pattern soon reads more at once. */
const firstBatch = 40;
const maxBatch = 1000;
/**
 * Longest a walk runs before the event loop serves anything else: what walks add to the latency
 * of /health, an SMTP reply or any other request, however many walks are under way.
 */
const sliceMs = 2;

const REGEX_QUERY = /^\/(.+)\/([a-z]*)$/s;
const flagBits: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, g: 0, u: 0 };

export interface SearchOptions extends Page {
  query: string;
  /** Time the regular-expression walk may run, in its slices (INBOXD_SEARCH_BUDGET_MS). */
  budgetMs: number;
  /** The organization of the inbox, whose walks at once are limited. */
  organizationId: string;
  /** Walks the organization may run at once (INBOXD_SEARCH_CONCURRENCY_PER_ORG). */
  walksPerOrganization: number;
  /** Only the messages with this label. */
  label?: string;
}

export async function searchMessages(store: Store, inboxId: string, options: SearchOptions): Promise<MessageSummaryRecord[]> {
  return (await searchMessagePage(store, inboxId, options)).items;
}

/**
 * The page of matches and whether another follows; never the total, which would cost what a page
 * avoids: every match of the index, or a walk over the whole inbox against the budget. A word or
 * phrase reads one match past the page, so its `next` is exact; a walk stops once the page is
 * full, so a full page says another may follow (at worst an empty one).
 */
export async function searchMessagePage(store: Store, inboxId: string, options: SearchOptions): Promise<Listing<MessageSummaryRecord>> {
  const page = { page: options.page, per: options.per };
  const phrase = options.query.trim();
  const regex = REGEX_QUERY.exec(phrase);
  const walked = (rows: MessageSummaryRecord[]): Listing<MessageSummaryRecord> => ({ page, items: rows, hasNext: rows.length === page.per });
  // Text the index cannot find in every case (MessageSearchStore.foldsAsRe2) is walked: an index
  // folds case only as it knows; a walk's RE2 folds it as the docs promise.
  const indexFolds = (text: string) => store.messageSearch.foldsAsRe2?.(text) ?? true;
  if (regex) {
    const requirement = literalRequirement(regex[1]!);
    // Whatever the flags: `(?i)` in the pattern asks for any case too.
    const usable = requirement && literalsOf(requirement).every(indexFolds) ? requirement : null;
    return walked(await regexSearch(store, inboxId, compile(regex[1]!, regex[2]!), usable, options));
  }
  const characters = [...phrase].length;
  const { minimumLiteralLength, longestPhrase = Infinity } = store.messageSearch;
  const indexed = characters >= minimumLiteralLength && indexFolds(phrase);
  if (indexed && characters <= longestPhrase) return lookedAhead(page, await store.messageSearch.containing(inboxId, phrase, page.page, page.per, 1, options.label));
  // One or two characters are below the trigram index: the same walk as a pattern without a
  // literal. A phrase longer than the index takes whole (longestPhrase): a walk over the index's
  // matches of its start and end.
  const requirement = indexed ? ({ kind: "literal", text: phrase } as const) : null;
  return walked(await regexSearch(store, inboxId, RE2JS.compile(RE2JS.quote(phrase), RE2JS.CASE_INSENSITIVE), requirement, options));
}

/** The literals a requirement names. */
const literalsOf = (requirement: LiteralRequirement): string[] => (requirement.kind === "literal" ? [requirement.text] : requirement.parts.flatMap(literalsOf));

function compile(pattern: string, flags: string): RE2JS {
  if (pattern.length > maxPatternLength) throw invalid(`query: a regular expression may be at most ${maxPatternLength} characters`);
  let bits = 0;
  for (const flag of flags) {
    if (!(flag in flagBits)) throw invalid(`query: unknown regular expression flag '${flag}' (known: i, m, s; g and u change nothing)`);
    bits |= flagBits[flag]!;
  }
  let regex: RE2JS;
  try {
    regex = RE2JS.compile(pattern, bits);
  } catch (e) {
    throw invalid(`query: invalid regular expression: ${(e as Error).message}`);
  }
  const size = programSize(regex);
  if (size > maxProgramSize) throw invalid(`query: the regular expression is too large once compiled (${size} steps, at most ${maxProgramSize}): repeat less, or search for a word`);
  return regex;
}

/** re2js's compiled program, which its typings leave out. */
const programSize = (regex: RE2JS) => (regex as unknown as { re2(): { prog: { numInst(): number } } }).re2().prog.numInst();

const matchesRow = (regex: RE2JS, row: SearchableMessage) => regex.test(row.subject) || regex.test(row.from) || (row.text !== null && regex.test(row.text));

/** Walks under way per organization id. Ids are unique, so one count serves every app of the process. */
const walking = new Map<string, number>();

/**
 * The rows to check, newest first (the index's matches for the requirement, else every message of
 * the inbox), read a batch at a time. A batch doubles while reading one takes under half a slice,
 * and halves when it takes more, so that a read of long messages does not outlast the slice it
 * falls in. Rows are taken synchronously: only a read waits for the store.
 */
class Candidates {
  private batch: SearchableMessage[] = [];
  private taken = 0;
  private after: SearchPosition | undefined;
  private finished = false;

  constructor(
    private readonly store: Store,
    private readonly inboxId: string,
    private readonly requirement: LiteralRequirement | null,
    private readonly label: string | undefined,
    private size: number,
  ) {}

  /** The next row; "read" when the batch is used up (call `read`), "done" when there are no more. */
  take(): SearchableMessage | "read" | "done" {
    if (this.taken < this.batch.length) return this.batch[this.taken++]!;
    return this.finished ? "done" : "read";
  }

  async read(): Promise<void> {
    const started = performance.now();
    const { rows, next } = await this.store.messageSearch.walk(this.inboxId, this.requirement, this.after, this.size, this.label);
    const took = performance.now() - started;
    this.batch = rows;
    this.taken = 0;
    this.finished = next === undefined;
    this.after = next;
    this.size = took < sliceMs / 2 ? Math.min(maxBatch, this.size * 2) : Math.max(1, Math.floor(this.size / 2));
  }
}

/**
 * Keeps the candidates the expression matches until the page is full, the candidates are done,
 * or the budget is spent (422: the caller cannot tell a partial page from the last one). The
 * budget counts the walk's own slices, not the turns it waits for: a busy server answers a walk
 * later, not differently. 429 while the organization already runs its share of walks.
 */
async function regexSearch(store: Store, inboxId: string, regex: RE2JS, requirement: LiteralRequirement | null, options: SearchOptions): Promise<MessageSummaryRecord[]> {
  const { organizationId, walksPerOrganization, budgetMs } = options;
  const running = walking.get(organizationId) ?? 0;
  if (running >= walksPerOrganization) {
    throw new ServiceError(
      "rate_limited",
      `Too many searches at once in this organization (at most ${walksPerOrganization} regular-expression or 1-2 character searches); retry shortly, or search for a word or a pattern with a literal of ${store.messageSearch.minimumLiteralLength} or more characters`,
      { "Retry-After": String(Math.ceil(budgetMs / 1000)) },
    );
  }
  walking.set(organizationId, running + 1);
  try {
    return await walk(store, inboxId, regex, requirement, options);
  } finally {
    const left = walking.get(organizationId)! - 1;
    if (left > 0) walking.set(organizationId, left);
    else walking.delete(organizationId);
  }
}

async function walk(store: Store, inboxId: string, regex: RE2JS, requirement: LiteralRequirement | null, { page, per, budgetMs, label }: SearchOptions): Promise<MessageSummaryRecord[]> {
  // Outside the budget: the index's backlog is any inbox's mail, and a burst of it is no fault of the pattern.
  if (requirement) await store.messageSearch.catchUp();
  const rows = new Candidates(store, inboxId, requirement, label, Math.min(maxBatch, Math.max(firstBatch, 2 * page * per)));
  let skip = (page - 1) * per;
  const found: string[] = [];
  // performance.now, not the app clock: the budget is real time in the walk's own slices, which tests never move.
  for (let spent = 0; ; ) {
    await takeTurn();
    const sliceStart = performance.now();
    let now = sliceStart;
    while (now - sliceStart < sliceMs) {
      const row = rows.take();
      if (row === "done") return store.messageSearch.summaries(found);
      if (row === "read") await rows.read();
      else if (matchesRow(regex, row)) {
        if (skip > 0) skip--;
        else if (found.push(row.id) === per) return store.messageSearch.summaries(found);
      }
      now = performance.now();
      if (spent + (now - sliceStart) > budgetMs) {
        throw invalid(`query: the search took longer than its ${budgetMs} ms budget; narrow the pattern with a literal of ${store.messageSearch.minimumLiteralLength} or more characters`);
      }
    }
    spent += now - sliceStart;
  }
}
