/**
 * Search over one inbox's messages (../sqlite/message-search.ts) with ILIKE, which the pg_trgm GIN
 * indexes of subject, text and sender answer for 3 characters or more (migrations/postgres/
 * 0001_mail.sql). Matches any case as FTS5's trigrams do; pages newest first by (created_at, id).
 *
 * A search with a literal reads the trigram indexes first and the inbox second, as the embedded
 * engine reads FTS5 first: the planner would otherwise take the inbox's own index (or, in a small
 * table, every row) and run ILIKE over each message's text, which costs milliseconds per long
 * message (160 messages of 50 kB: 400 ms against 0.6 ms through the trigram indexes).
 */
import { and, desc, eq, inArray, or, sql, type SQL } from "drizzle-orm";
import type { LiteralRequirement, MessageSearchStore, SearchableMessage, SearchPosition } from "../store";
import { SEARCHED_TEXT_CHARS } from "../searched-text";
import { walkStepOf } from "../walk-step";
import { likeContaining, type PgDb } from "./db";
import { summaryColumns } from "./messages";
import { messages } from "./schema/index";

/** pg_trgm indexes 3-character substrings; a shorter literal cannot use it. */
const MINIMUM_LITERAL_LENGTH = 3;

/** The last row a walk saw, in (created_at, id) descending order. */
interface Position {
  createdAt: number;
  id: string;
}

/** Subject, text or sender holds `text`, in any case. */
const holding = (text: string): SQL => {
  const pattern = likeContaining(text);
  return or(sql`${messages.subject} ILIKE ${pattern}`, sql`${messages.text} ILIKE ${pattern}`, sql`${messages.from} ILIKE ${pattern}`)!;
};

/**
 * A condition every message meeting the requirement satisfies, or undefined when it cannot narrow
 * the search: literals below MINIMUM_LITERAL_LENGTH require nothing the index can check (as ftsQuery).
 */
function meeting(requirement: LiteralRequirement): SQL | undefined {
  switch (requirement.kind) {
    case "literal":
      return [...requirement.text].length >= MINIMUM_LITERAL_LENGTH ? holding(requirement.text) : undefined;
    case "all": {
      const parts = requirement.parts.map(meeting).filter((part): part is SQL => part !== undefined);
      return parts.length === 0 ? undefined : and(...parts);
    }
    case "oneOf": {
      const parts = requirement.parts.map(meeting);
      return parts.some((part) => part === undefined) ? undefined : or(...(parts as SQL[]));
    }
  }
}

/** The inbox, written so that no index of the inbox can answer it: the trigram indexes do. */
const inInboxAfterIndex = (inboxId: string) => sql`(${messages.inboxId} || '') = ${inboxId}`;

/** `work` with the trigram indexes as the only way in (sequential scans off for its statements). */
function throughTrigramIndexes<T>(db: PgDb, work: (db: PgDb) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`SET LOCAL enable_seqscan = off`);
    const value = await work(tx);
    await tx.execute(sql`SET LOCAL enable_seqscan = on`);
    return value;
  });
}

const withLabel = (label: string | undefined) =>
  label === undefined ? undefined : sql`EXISTS (SELECT 1 FROM message_labels WHERE message_labels.message_id = ${messages.id} AND message_labels.label = ${label})`;

export function messageSearchStore(db: PgDb): MessageSearchStore {
  return {
    minimumLiteralLength: MINIMUM_LITERAL_LENGTH,
    unindexed: async () => 0,
    async containing(inboxId, text, page, per, extra = 0, label) {
      return throughTrigramIndexes(db, (tx) =>
        tx
          .select(summaryColumns)
          .from(messages)
          .where(and(inInboxAfterIndex(inboxId), holding(text), withLabel(label)))
          .orderBy(desc(messages.createdAt), desc(messages.id))
          .limit(per + extra)
          .offset((page - 1) * per),
      );
    },
    async walk(inboxId, requirement, after, limit, label) {
      const from = after as unknown as Position | undefined;
      const literals = requirement ? meeting(requirement) : undefined;
      const page = (db: PgDb) =>
        db
          // The text as far as a walk tests it (../searched-text.ts): a 20 MiB text is not read whole.
          .select({ id: messages.id, createdAt: messages.createdAt, subject: messages.subject, text: sql<string | null>`substr(${messages.text}, 1, ${sql.raw(String(SEARCHED_TEXT_CHARS))})`, from: messages.from })
          .from(messages)
          .where(
            and(
              literals ? inInboxAfterIndex(inboxId) : eq(messages.inboxId, inboxId),
              from && sql`(${messages.createdAt}, ${messages.id}) < (${from.createdAt}, ${from.id})`,
              literals,
              withLabel(label),
            ),
          )
          .orderBy(desc(messages.createdAt), desc(messages.id))
          .limit(limit);
      const rows = await (literals ? throughTrigramIndexes(db, page) : page(db));
      return walkStepOf(
        rows.map(({ createdAt, ...row }): SearchableMessage => ({ ...row, position: { createdAt, id: row.id } as Position as unknown as SearchPosition })),
        limit,
      );
    },
    catchUp: async () => {},
    /** In the order given; messages gone since the walk found them are left out. */
    async summaries(messageIds) {
      if (messageIds.length === 0) return [];
      const rows = await db.select(summaryColumns).from(messages).where(inArray(messages.id, messageIds));
      const byId = new Map(rows.map((row) => [row.id, row]));
      return messageIds.flatMap((id) => byId.get(id) ?? []);
    },
  };
}
