/**
 * Mail is written by whoever sends it: a message may carry text meant to steer the agent that
 * reads it (prompt injection). Every piece of mail content a tool returns is wrapped in a marked
 * block, so that the model is told where outside text starts and ends; identifiers, addresses,
 * dates and statuses stay plain structured fields.
 */

export const untrustedOpen = "<untrusted-email-content>";
export const untrustedClose = "</untrusted-email-content>";

/** Either marker as written inside the content, whatever its case and spacing: it could end the block early or open a fake one. */
const marker = /<(\s*\/?\s*)(untrusted-email-content)/gi;

export const untrusted = (content: string): string => `${untrustedOpen}${content.replace(marker, "&lt;$1$2")}${untrustedClose}`;

/** Fields of the API's objects (messages, threads, webhook payloads) whose text comes from senders. */
const contentFields = new Set(["subject", "text", "html", "fromName", "preview"]);

/**
 * The API's JSON with every content field wrapped, at any depth (a thread's messages, a webhook
 * attempt's payload). Attachments keep their metadata, their file name wrapped; their base64
 * content is left out of these results (`get_attachment` returns one).
 */
export function markUntrusted(value: unknown, key?: string): unknown {
  if (typeof value === "string") return key !== undefined && contentFields.has(key) ? untrusted(value) : value;
  if (Array.isArray(value)) return key === "attachments" ? value.map(markAttachment) : value.map((item) => markUntrusted(item));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([field, inner]) => [field, markUntrusted(inner, field)]));
}

/**
 * Drafts are the organization's own writing, left as they are, but for the subject of a reply
 * draft: it starts as the answered message's, "Re: " and the sender's words, whoever edits it later.
 */
export function markDraftSubjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(markDraftSubjects);
  if (typeof value !== "object" || value === null) return value;
  const { inReplyToMessageId, subject } = value as Record<string, unknown>;
  return typeof inReplyToMessageId === "string" && typeof subject === "string" ? { ...value, subject: untrusted(subject) } : value;
}

function markAttachment(attachment: unknown): unknown {
  if (typeof attachment !== "object" || attachment === null) return attachment;
  const { content: _, name, ...rest } = attachment as Record<string, unknown>;
  return { ...rest, ...(typeof name === "string" ? { name: untrusted(name) } : {}) };
}
