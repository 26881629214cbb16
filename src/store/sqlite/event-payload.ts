/** Stored event payloads read back whole on the embedded engine (../event-payload.ts says what is left out of them). */
import type { Database } from "bun:sqlite";
import { withContent, type BlobStore } from "./blobs";
import { openPayload, wholePayload } from "../event-payload";

export { storedPayload } from "../event-payload";

/** `attachmentContents` false: attachments as stored, without their content, whose bytes are then not read. */
export function payloadReader(sqlite: Database, blobs: BlobStore, { attachmentContents = true } = {}): (stored: string) => string {
  const contents = sqlite.query<{ id: string; content: Buffer; blobId: string | null }, [string]>("SELECT id, content, blob_id AS blobId FROM attachments WHERE id IN (SELECT value FROM json_each(?1))");
  const bodies = sqlite.query<{ text: string | null; html: string | null }, [string]>("SELECT text, html FROM messages WHERE id = ?1");
  const whole = withContent(blobs);
  return (stored) => {
    const opened = openPayload(stored);
    if (!opened) return stored;
    const rows = attachmentContents && opened.attachments.length > 0 ? contents.all(JSON.stringify(opened.attachments.map((a) => a.id))) : [];
    return wholePayload(opened, opened.messageId ? (bodies.get(opened.messageId) ?? undefined) : undefined, new Map(rows.map((row) => [row.id, whole(row).content])));
  };
}
