/**
 * Event payloads are stored without the contents of message attachments: those are in the
 * attachments table already, and a 15 MB attachment would otherwise be written a second time,
 * as 20 MB of base64 JSON, in the transaction of every message event (and held as that string in
 * memory). Readers get the payload whole again by attachment id, so webhook bodies and the
 * attempts log stay byte for byte what they were.
 */
type AttachmentPayload = { id?: unknown; content?: unknown };

export const isAttachment = (value: unknown): value is AttachmentPayload => typeof value === "object" && value !== null && typeof (value as AttachmentPayload).id === "string" && (value as { id: string }).id.startsWith("att_");

/** The payload as stored: JSON, attachments' `content` left out, and never read (presentAttachment encodes it on first read). */
export function storedPayload(payload: object): string {
  const { attachments } = payload as { attachments?: unknown };
  if (!Array.isArray(attachments)) return JSON.stringify(payload);
  const withoutContent = (value: unknown) => (isAttachment(value) ? Object.fromEntries(Object.keys(value).flatMap((key) => (key === "content" ? [] : [[key, value[key as keyof AttachmentPayload]]]))) : value);
  return JSON.stringify({ ...payload, attachments: attachments.map(withoutContent) });
}

