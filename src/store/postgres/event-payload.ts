/** Stored event payloads read back whole (../event-payload.ts says why they are stored without attachment contents). */
import { sql } from "drizzle-orm";
import { isAttachment } from "../event-payload";
import { withContent, type PgBlobs } from "./blobs";
import { listOf, rowsOf, type PgDb } from "./db";

/** Each message attachment of a payload gets its `content` (base64) again, last, where presentAttachment puts it. */
export function payloadReader(db: PgDb, blobs: PgBlobs): (stored: string) => Promise<string> {
  const whole = withContent(blobs);
  return async (stored) => {
    if (!stored.includes('"att_')) return stored;
    const payload = JSON.parse(stored) as { attachments?: unknown };
    if (!Array.isArray(payload.attachments)) return stored;
    const attachments = payload.attachments.filter(isAttachment);
    const rows = await rowsOf<{ id: string; content: Buffer; blobId: string | null }>(
      db,
      sql`SELECT id, content, blob_id AS "blobId" FROM attachments WHERE id IN (SELECT ids.id FROM ${listOf(attachments.map((a) => a.id as string))} AS ids(id, position))`,
    );
    const byId = new Map(await Promise.all(rows.map(async (row) => [row.id, (await whole(row)).content] as const)));
    for (const attachment of attachments) {
      const content = byId.get(attachment.id as string);
      // An attachment whose message was deleted since: the payload keeps what it still has.
      if (content) attachment.content = content.toString("base64");
    }
    return JSON.stringify(payload);
  };
}
