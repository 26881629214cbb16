/**
 * Event payloads are stored without the contents of message attachments: those are in the
 * attachments table already, and a 15 MB attachment would otherwise be written a second time,
 * as 20 MB of base64 JSON, in the transaction of every message event (and held as that string in
 * memory). Readers get the payload whole again by attachment id, so webhook bodies and the
 * attempts log stay byte for byte what they were.
 */
import type { Database } from "bun:sqlite";
import { withContent, type BlobStore } from "./blobs";

type AttachmentPayload = { id?: unknown; content?: unknown };

const isAttachment = (value: unknown): value is AttachmentPayload => typeof value === "object" && value !== null && typeof (value as AttachmentPayload).id === "string" && (value as { id: string }).id.startsWith("att_");

/** The payload as stored: JSON, attachments' `content` left out, and never read (presentAttachment encodes it on first read). */
export function storedPayload(payload: object): string {
  const { attachments } = payload as { attachments?: unknown };
  if (!Array.isArray(attachments)) return JSON.stringify(payload);
  const withoutContent = (value: unknown) => (isAttachment(value) ? Object.fromEntries(Object.keys(value).flatMap((key) => (key === "content" ? [] : [[key, value[key as keyof AttachmentPayload]]]))) : value);
  return JSON.stringify({ ...payload, attachments: attachments.map(withoutContent) });
}

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
