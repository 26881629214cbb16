/**
 * Search over one inbox's messages through the FTS5 trigram index (migration 0040). FTS5 walks
 * its matches in rowid order, newest first here, so a page stops reading as soon as it is full;
 * rowid order is arrival order, which is the list's created_at order while the clock runs forward.
 * The index holds every inbox's messages, and a statement pays for the other inboxes' matches in
 * its range too, so index reads cover a window of rowids each (./windowed-search.ts).
 */
import { and, count, desc, eq, gte, inArray, lt, sql } from "drizzle-orm";
import type { SearchableMessage, SearchPosition } from "../store";
import type { Db } from "./db";
import { SEARCHED_TEXT_CHARS } from "../searched-text";
import { ftsFoldingCheck } from "./fts-folding";
import { ftsPhrase, LONGEST_PLAIN_PHRASE, MINIMUM_LITERAL_LENGTH } from "./fts-query";
import { summaryColumns, type MessageSummaryRow } from "./messages";
import { messages, messagesFts, messagesFtsPending } from "./schema/index";

/** The last row a walk saw, in (created_at, rowid) descending order. */
export interface Position {
  createdAt: number;
  rowid: number;
}

/** Rowids from `lowest` up to, not including, `before`. */
export interface RowidWindow {
  lowest: number;
  before: number;
}

const rowid = sql<number>`messages.rowid`;
// The text as far as a walk tests it (../searched-text.ts): a 20 MiB text is not read whole.
const walkColumns = { id: messages.id, rowid, createdAt: messages.createdAt, subject: messages.subject, text: sql<string | null>`substr(${messages.text}, 1, ${sql.raw(String(SEARCHED_TEXT_CHARS))})`, from: messages.from };
const matches = sql`messages_fts MATCH ${sql.placeholder("match")}`;
const sameRow = sql`messages.rowid = messages_fts.rowid`;
const start: Position = { createdAt: Number.MAX_SAFE_INTEGER, rowid: Number.MAX_SAFE_INTEGER };

type WalkRow = { id: string; rowid: number; createdAt: number; subject: string; text: string | null; from: string };
const searchable = ({ rowid, createdAt, ...row }: WalkRow): SearchableMessage => ({ ...row, position: { createdAt, rowid } as Position as unknown as SearchPosition });
const inWindow = and(gte(sql`messages_fts.rowid`, sql.placeholder("lowest")), lt(sql`messages_fts.rowid`, sql.placeholder("before")));

/** The statements of a search, all messages or (`labeled`) only those with the `label` placeholder's label (migration 0150). */
function searchStatements(db: Db, labeled: boolean) {
  const withLabel = labeled ? sql`EXISTS (SELECT 1 FROM message_labels WHERE message_labels.message_id = messages.id AND message_labels.label = ${sql.placeholder("label")})` : undefined;
  return {
    matching: db
      .select({ id: messages.id })
      .from(messagesFts)
      .innerJoin(messages, sameRow)
      .where(and(matches, eq(messages.inboxId, sql.placeholder("inboxId")), inWindow, withLabel))
      .orderBy(desc(sql`messages_fts.rowid`))
      .limit(sql.placeholder("limit"))
      .prepare(),
    candidates: db
      .select(walkColumns)
      .from(messagesFts)
      .innerJoin(messages, sameRow)
      .where(and(matches, eq(messages.inboxId, sql.placeholder("inboxId")), inWindow, withLabel))
      .orderBy(desc(sql`messages_fts.rowid`))
      .limit(sql.placeholder("limit"))
      .prepare(),
    scan: db
      .select(walkColumns)
      .from(messages)
      // A row value, so that the index range starts at the position instead of the inbox's newest row.
      .where(and(eq(messages.inboxId, sql.placeholder("inboxId")), sql`(${messages.createdAt}, messages.rowid) < (${sql.placeholder("createdAt")}, ${sql.placeholder("rowid")})`, withLabel))
      .orderBy(desc(messages.createdAt), desc(rowid))
      .limit(sql.placeholder("limit"))
      .prepare(),
  };
}

export const messageSearchStore = (db: Db) => {
  const all = searchStatements(db, false);
  const labeled = searchStatements(db, true);

  const newest = db.select({ rowid: sql<number | null>`max(messages.rowid)` }).from(messages).prepare();

  return {
    minimumLiteralLength: MINIMUM_LITERAL_LENGTH,
    longestPhrase: LONGEST_PLAIN_PHRASE,
    foldsAsRe2: ftsFoldingCheck(),
    unindexed: (): number => db.select({ n: count() }).from(messagesFtsPending).get()!.n,
    /** Where the first window of a search ends: past the newest message's rowid (0: no message). */
    rowidEnd: (): number => (newest.get()?.rowid ?? -1) + 1,
    /** The ids of the inbox's messages in `window` whose subject, text or sender holds `text` (any case), newest first, at most `limit`. */
    containingIn(inboxId: string, text: string, window: RowidWindow, limit: number, label?: string): string[] {
      const { matching } = label === undefined ? all : labeled;
      return matching.all({ inboxId, match: ftsPhrase(text), ...window, limit, label }).map((row) => row.id);
    },
    /** The index's matches in `window` of a requirement's query (ftsQuery), newest first, at most `limit`. */
    candidatesIn(inboxId: string, match: string, window: RowidWindow, limit: number, label?: string): SearchableMessage[] {
      const { candidates } = label === undefined ? all : labeled;
      return candidates.all({ inboxId, match, ...window, limit, label }).map(searchable);
    },
    /** Every message of the inbox after `after`, newest first: what a walk without a literal reads. */
    scan(inboxId: string, after: SearchPosition | undefined, limit: number, label?: string): SearchableMessage[] {
      const from = (after as unknown as Position | undefined) ?? start;
      const { scan } = label === undefined ? all : labeled;
      return scan.all({ inboxId, createdAt: from.createdAt, rowid: from.rowid, limit, label }).map(searchable);
    },
    summaries(messageIds: string[]): MessageSummaryRow[] {
      if (messageIds.length === 0) return [];
      const rows = db.select(summaryColumns).from(messages).where(inArray(messages.id, messageIds)).all();
      const byId = new Map(rows.map((row) => [row.id, row]));
      return messageIds.flatMap((id) => byId.get(id) ?? []);
    },
  };
};
