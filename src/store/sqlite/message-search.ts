/**
 * Search over one inbox's messages through the FTS5 trigram index (migration 0040). FTS5 walks
 * its matches in rowid order, newest first here, so a page stops reading as soon as it is full;
 * rowid order is arrival order, which is the list's created_at order while the clock runs forward.
 */
import { and, count, desc, eq, inArray, lt, sql } from "drizzle-orm";
import type { LiteralRequirement, SearchableMessage, SearchPosition } from "../store";
import type { Db } from "./db";
import { ftsPhrase, ftsQuery, MINIMUM_LITERAL_LENGTH } from "./fts-query";
import { summaryColumns, type MessageSummaryRow } from "./messages";
import { messages, messagesFts, messagesFtsPending } from "./schema/index";

/** The last row a walk saw, in (created_at, rowid) descending order. */
interface Position {
  createdAt: number;
  rowid: number;
}

const rowid = sql<number>`messages.rowid`;
const walkColumns = { id: messages.id, rowid, createdAt: messages.createdAt, subject: messages.subject, text: messages.text, from: messages.from };
const matches = sql`messages_fts MATCH ${sql.placeholder("match")}`;
const sameRow = sql`messages.rowid = messages_fts.rowid`;
const start: Position = { createdAt: Number.MAX_SAFE_INTEGER, rowid: Number.MAX_SAFE_INTEGER };

type WalkRow = { id: string; rowid: number; createdAt: number; subject: string; text: string | null; from: string };
const searchable = ({ rowid, createdAt, ...row }: WalkRow): SearchableMessage => ({ ...row, position: { createdAt, rowid } as Position as unknown as SearchPosition });

/** The statements of a search, all messages or (`labeled`) only those with the `label` placeholder's label (migration 0150). */
function searchStatements(db: Db, labeled: boolean) {
  const withLabel = labeled ? sql`EXISTS (SELECT 1 FROM message_labels WHERE message_labels.message_id = messages.id AND message_labels.label = ${sql.placeholder("label")})` : undefined;
  return {
    matchingPage: db
      .select(summaryColumns)
      .from(messagesFts)
      .innerJoin(messages, sameRow)
      .where(and(matches, eq(messages.inboxId, sql.placeholder("inboxId")), withLabel))
      .orderBy(desc(sql`messages_fts.rowid`))
      .limit(sql.placeholder("limit"))
      .offset(sql.placeholder("offset"))
      .prepare(),
    candidates: db
      .select(walkColumns)
      .from(messagesFts)
      .innerJoin(messages, sameRow)
      .where(and(matches, eq(messages.inboxId, sql.placeholder("inboxId")), lt(sql`messages_fts.rowid`, sql.placeholder("before")), withLabel))
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

  return {
    minimumLiteralLength: MINIMUM_LITERAL_LENGTH,
    unindexed: (): number => db.select({ n: count() }).from(messagesFtsPending).get()!.n,
    containing(inboxId: string, text: string, page: number, per: number, extra = 0, label?: string): MessageSummaryRow[] {
      const { matchingPage } = label === undefined ? all : labeled;
      return matchingPage.all({ inboxId, match: ftsPhrase(text), limit: per + extra, offset: (page - 1) * per, label });
    },
    /** The index's matches when the requirement has a literal it can look up; else every message. */
    walk(inboxId: string, requirement: LiteralRequirement | null, after: SearchPosition | undefined, limit: number, label?: string): SearchableMessage[] {
      const from = (after as unknown as Position | undefined) ?? start;
      const match = requirement && ftsQuery(requirement);
      const { candidates, scan } = label === undefined ? all : labeled;
      const rows = match ? candidates.all({ inboxId, match, before: from.rowid, limit, label }) : scan.all({ inboxId, createdAt: from.createdAt, rowid: from.rowid, limit, label });
      return rows.map(searchable);
    },
    summaries(messageIds: string[]): MessageSummaryRow[] {
      if (messageIds.length === 0) return [];
      const rows = db.select(summaryColumns).from(messages).where(inArray(messages.id, messageIds)).all();
      const byId = new Map(rows.map((row) => [row.id, row]));
      return messageIds.flatMap((id) => byId.get(id) ?? []);
    },
  };
};
