/**
 * Event payloads are stored without what the database holds already, and readers make them whole
 * again, so that webhook bodies, the event stream and the attempts log stay byte for byte what they
 * were:
 * - the contents of message attachments: they are in the attachments table, and a 15 MB attachment
 *   would otherwise be written a second time, as 20 MB of base64 JSON, in the transaction of every
 *   message event (and held as that string in memory);
 * - the text and HTML of the message a message event presents: they never change once the message
 *   is stored, and were most of the payload (2.9 of 3.5 kB for a short message with both parts). A
 *   received message wrote 11 % fewer bytes without them (bench/smtp-ingest/catch-up.ts). A message
 *   deleted before its event is read leaves `text` and `html` out of it, like its attachments'
 *   contents, which go with it.
 */
type AttachmentPayload = { id?: unknown; content?: unknown };

export const isAttachment = (value: unknown): value is AttachmentPayload => typeof value === "object" && value !== null && typeof (value as AttachmentPayload).id === "string" && (value as { id: string }).id.startsWith("att_");

/** Stands for a body field in a stored payload: a field that is a string or null in every message. */
const STORED_WITH_MESSAGE = { storedWith: "message" } as const;
const storedWithMessage = JSON.stringify(STORED_WITH_MESSAGE);
const BODY_FIELDS = ["text", "html"] as const;
type Bodies = { text: string | null; html: string | null };

/**
 * The payload as stored: JSON, attachments' `content` left out (never read: presentAttachment
 * encodes it on first read), and, when it presents the event's message, that message's text and HTML.
 */
export function storedPayload(payload: object, messageId?: string | null): string {
  const { attachments } = payload as { attachments?: unknown };
  const presentsMessage = messageId != null && (payload as { id?: unknown }).id === messageId;
  if (!Array.isArray(attachments) && !presentsMessage) return JSON.stringify(payload);
  const stored: Record<string, unknown> = { ...payload };
  if (Array.isArray(attachments)) stored.attachments = attachments.map(withoutContent);
  if (presentsMessage) for (const field of BODY_FIELDS) if (typeof stored[field] === "string") stored[field] = STORED_WITH_MESSAGE;
  return JSON.stringify(stored);
}

const withoutContent = (value: unknown) => (isAttachment(value) ? Object.fromEntries(Object.keys(value).flatMap((key) => (key === "content" ? [] : [[key, value[key as keyof AttachmentPayload]]]))) : value);

/** A stored payload that lacks parts of the database: which, to be read by the engine. */
export interface OpenedPayload {
  payload: Record<string, unknown>;
  /** Its attachments, each to get its `content`. */
  attachments: AttachmentPayload[];
  /** The message whose text and HTML it lacks. */
  messageId?: string;
}

/** Null when the stored payload is whole as it is. */
export function openPayload(stored: string): OpenedPayload | null {
  const lacksBodies = stored.includes(storedWithMessage);
  if (!lacksBodies && !stored.includes('"att_')) return null;
  const payload = JSON.parse(stored) as Record<string, unknown>;
  const attachments = Array.isArray(payload.attachments) ? payload.attachments.filter(isAttachment) : [];
  if (!lacksBodies && attachments.length === 0) return null;
  return { payload, attachments, messageId: lacksBodies ? (payload.id as string) : undefined };
}

/**
 * The payload whole, from what the engine read: the message's text and HTML (undefined: the
 * message is gone, and they are left out, as an optional field without a value is), and
 * attachment contents by id (an attachment whose message was deleted since keeps what it still
 * has). Contents go last, where presentAttachment puts them.
 */
export function wholePayload({ payload, attachments }: OpenedPayload, bodies: Bodies | undefined, contents: ReadonlyMap<string, Uint8Array>): string {
  for (const field of BODY_FIELDS) {
    if (!isStoredWithMessage(payload[field])) continue;
    const body = bodies?.[field];
    if (body === undefined || body === null) delete payload[field];
    else payload[field] = body;
  }
  for (const attachment of attachments) {
    const content = contents.get(attachment.id as string);
    if (content) attachment.content = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString("base64");
  }
  return JSON.stringify(payload);
}

const isStoredWithMessage = (value: unknown) => typeof value === "object" && value !== null && (value as { storedWith?: unknown }).storedWith === STORED_WITH_MESSAGE.storedWith;
