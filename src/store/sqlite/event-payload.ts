/** Stored event payloads read back whole on the embedded engine (../event-payload.ts says why they are stored without attachment contents). */
import type { Database } from "bun:sqlite";
import { withContent, type BlobStore } from "./blobs";
import { isAttachment } from "../event-payload";

export { storedPayload } from "../event-payload";

/** Reads stored payloads back whole: each message attachment gets its `content` (base64) again, last, where presentAttachment puts it. */
export function payloadReader(sqlite: Database, blobs: BlobStore): (stored: string) => string {
  const contents = sqlite.query<{ id: string; content: Buffer; blobId: string | null }, [string]>("SELECT id, content, blob_id AS blobId FROM attachments WHERE id IN (SELECT value FROM json_each(?1))");
  const whole = withContent(blobs);
  return (stored) => {
    if (!stored.includes('"att_')) return stored;
    const payload = JSON.parse(stored) as { attachments?: unknown };
    if (!Array.isArray(payload.attachments)) return stored;
    const attachments = payload.attachments.filter(isAttachment);
    const byId = new Map(contents.all(JSON.stringify(attachments.map((a) => a.id))).map((row) => [row.id, whole(row).content]));
    for (const attachment of attachments) {
      const content = byId.get(attachment.id as string);
      // An attachment whose message was deleted since: the payload keeps what it still has.
      if (content) attachment.content = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString("base64");
    }
    return JSON.stringify(payload);
  };
}
