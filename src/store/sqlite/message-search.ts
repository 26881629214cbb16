/**
 * Search over one inbox's messages through the FTS5 trigram index (migration 0040). FTS5 walks
 * its matches in rowid order, newest first here, so a page stops reading as soon as it is full;
 * rowid order is arrival order, which is the list's created_at order while the clock runs forward.
 */
import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { messages, messagesFts } from "./schema/index";
import type { Db } from "./db";
import { summaryColumns, type MessageSummaryRow } from "./messages";

/** What a regular expression is checked against, with the position to continue from. */
export interface SearchableRow {
  rowid: number;
  createdAt: number;
  subject: string;
  text: string | null;
  from: string;
}

/** Where a scan of the inbox stopped: the last row seen, in (created_at, rowid) descending order. */
export type ScanCursor = Pick<SearchableRow, "createdAt" | "rowid">;

const rowid = sql<number>`messages.rowid`;
const searchableColumns = { rowid, createdAt: messages.createdAt, subject: messages.subject, text: messages.text, from: messages.from };
const matches = sql`messages_fts MATCH ${sql.placeholder("match")}`;
const sameRow = sql`messages.rowid = messages_fts.rowid`;

export const messageSearchStore = (db: Db) => {
  const matchingPage = db
    .select(summaryColumns)
    .from(messagesFts)
    .innerJoin(messages, sameRow)
    .where(and(matches, eq(messages.inboxId, sql.placeholder("inboxId"))))
    .orderBy(desc(sql`messages_fts.rowid`))
    .limit(sql.placeholder("limit"))
    .offset(sql.placeholder("offset"))
    .prepare();
  const candidates = db
    .select(searchableColumns)
    .from(messagesFts)
    .innerJoin(messages, sameRow)
    .where(and(matches, eq(messages.inboxId, sql.placeholder("inboxId")), lt(sql`messages_fts.rowid`, sql.placeholder("before"))))
    .orderBy(desc(sql`messages_fts.rowid`))
    .limit(sql.placeholder("limit"))
    .prepare();
  const scan = db
    .select(searchableColumns)
    .from(messages)
    // A row value, so that the index range starts at the cursor instead of the inbox's newest row.
    .where(and(eq(messages.inboxId, sql.placeholder("inboxId")), sql`(${messages.createdAt}, messages.rowid) < (${sql.placeholder("createdAt")}, ${sql.placeholder("rowid")})`))
    .orderBy(desc(messages.createdAt), desc(rowid))
    .limit(sql.placeholder("limit"))
    .prepare();

  return {
    /** A page of the inbox's messages that match an FTS5 query, newest first. */
    matchingPage(inboxId: string, match: string, page: number, per: number): MessageSummaryRow[] {
      return matchingPage.all({ inboxId, match, limit: per, offset: (page - 1) * per });
    },
    /** The next `limit` rows (below rowid `before`) that match an FTS5 query: candidates to check. */
    candidates(inboxId: string, match: string, before: number, limit: number): SearchableRow[] {
      return candidates.all({ inboxId, match, before, limit });
    },
    /** The next `limit` rows of the inbox after the cursor, newest first, for a scan without index. */
    scan(inboxId: string, cursor: ScanCursor, limit: number): SearchableRow[] {
      return scan.all({ inboxId, createdAt: cursor.createdAt, rowid: cursor.rowid, limit });
    },
    /**
     * The list fields of the given rows, in the order given. A walk reads between other requests,
     * so a row it found may be gone since (its inbox deleted): such rows are left out.
     */
    summaries(rowids: number[]): MessageSummaryRow[] {
      if (rowids.length === 0) return [];
      const rows = db.select({ ...summaryColumns, rowid }).from(messages).where(inArray(rowid, rowids)).all();
      const byRowid = new Map(rows.map(({ rowid, ...row }) => [rowid, row]));
      return rowids.flatMap((id) => byRowid.get(id) ?? []);
    },
  };
};
