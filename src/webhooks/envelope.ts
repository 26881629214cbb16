/**
 * The delivery body: both envelope shapes of the service description in one object
 * (`{event, data, timestamp}` and `{event, payload, inboxId, messageId}`), plus the event `id`
 * that stays the same across retries so receivers can deduplicate (docs/api.md, "Webhooks").
 */
import { iso } from "../clock";

export interface EnvelopeEvent {
  id: string;
  type: string;
  createdAt: number;
  inboxId: string | null;
  messageId: string | null;
  /** The presented resource as JSON text, as the events table stores it. */
  payload: string;
}

/**
 * The exact text that is signed and sent. The stored payload is spliced in as it is: parsing it
 * only to serialise it again would cost on every delivery and could not change a byte.
 */
export function envelopeBody(event: EnvelopeEvent): string {
  const head = JSON.stringify({ id: event.id, event: event.type, timestamp: iso(event.createdAt) });
  const inbox = event.inboxId === null ? "" : `,"inboxId":${JSON.stringify(event.inboxId)}`;
  const message = event.messageId === null ? "" : `,"messageId":${JSON.stringify(event.messageId)}`;
  return `${head.slice(0, -1)},"data":${event.payload},"payload":${event.payload}${inbox}${message}}`;
}
