/** Stored event payloads read back whole (../event-payload.ts says what is left out of them). */
import { sql } from "drizzle-orm";
import { openPayload, wholePayload } from "../event-payload";
import { withContent, type PgBlobs } from "./blobs";
import { listOf, rowsOf, type PgDb } from "./db";

/** `attachmentContents` false: attachments as stored, without their content, whose bytes are then not read. */
export function payloadReader(db: PgDb, blobs: PgBlobs, { attachmentContents = true } = {}): (stored: string) => Promise<string> {
  const whole = withContent(blobs);
  return async (stored) => {
    const opened = openPayload(stored);
    if (!opened) return stored;
    const rows =
      !attachmentContents || opened.attachments.length === 0
        ? []
        : await rowsOf<{ id: string; content: Buffer; blobId: string | null }>(
            db,
            sql`SELECT id, content, blob_id AS "blobId" FROM attachments WHERE id IN (SELECT ids.id FROM ${listOf(opened.attachments.map((a) => a.id as string))} AS ids(id, position))`,
          );
    const contents = new Map(await Promise.all(rows.map(async (row) => [row.id, (await whole(row)).content] as const)));
    const [bodies] = opened.messageId ? await rowsOf<{ text: string | null; html: string | null }>(db, sql`SELECT text, html FROM messages WHERE id = ${opened.messageId}`) : [];
    return wholePayload(opened, bodies, contents);
  };
}
