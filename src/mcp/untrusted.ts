/**
 * Mail is written by whoever sends it: a message may carry text meant to steer the agent that
 * reads it (prompt injection). Every piece of mail content a tool returns is wrapped in a marked
 * block, so that the model is told where outside text starts and ends; identifiers, addresses,
 * dates and statuses stay plain structured fields.
 */

export const untrustedOpen = "<untrusted-email-content>";
export const untrustedClose = "</untrusted-email-content>";

/**
 * The `<` of either marker as written inside the content, whatever its case and spacing, and with
 * characters that show as nothing anywhere in it (Unicode's format characters and the rest of its
 * default-ignorable ones: U+200B, U+00AD, variation selectors, Hangul fillers...): it could end the
 * block early or open a fake one. Only the `<` is matched (the rest is a look-ahead with one way to
 * match each character): `<(\s*\/?\s*)` took quadratic time on a `<` before a long run of spaces
 * (5 s for 64 KiB, on the event loop).
 */
const invisible = "\\p{Cf}\\p{Default_Ignorable_Code_Point}";
const gap = `[\\s${invisible}]*`;
const markerWord = [..."untrusted-email-content"].join(`[${invisible}]*`);
const marker = new RegExp(`<(?=${gap}(?:\\/${gap})?${markerWord})`, "giu");

export const untrusted = (content: string): string => `${untrustedOpen}${content.replace(marker, "&lt;")}${untrustedClose}`;

/**
 * Fields of the API's objects (messages, threads, webhook payloads) whose text comes from senders;
 * a delivery's `lastResponse` is the text of the recipient's mail server, whoever runs it, and a
 * webhook attempt's `response` the endpoint's reply, which may echo the mail it was sent.
 */
const contentFields = new Set(["subject", "text", "html", "fromName", "preview", "lastResponse", "response"]);
/** Address fields: plain, but for an address whose quoted local part is free text its sender chose. */
const addressFields = new Set(["from", "to", "cc", "bcc", "replyTo", "recipient"]);
/**
 * The most of a body (text or html) a result carries: a message of 10 MB put 19 MB into an
 * agent's context (and, forty in one request, 2.9 GB into the server). Past it the body is cut,
 * and `textChars`/`htmlChars` say how long it is.
 */
export const MAX_BODY_CHARS = 64 * 1024;

const markedString = (value: string, key: string | undefined) =>
  key !== undefined && (contentFields.has(key) || (addressFields.has(key) && value.includes('"'))) ? untrusted(value) : value;

/**
 * The API's JSON with every content field wrapped, at any depth (a thread's messages, a webhook
 * attempt's payload), and each body cut at MAX_BODY_CHARS. Attachments keep their metadata, their
 * sender-written fields wrapped; their base64 content is left out of these results (`get_attachment`
 * returns one).
 */
export function markUntrusted(value: unknown, key?: string): unknown {
  if (typeof value === "string") return markedString(value, key);
  if (Array.isArray(value)) return key === "attachments" ? value.map(markAttachment) : value.map((item) => markUntrusted(item, addressFields.has(key ?? "") ? key : undefined));
  if (typeof value !== "object" || value === null) return value;
  const marked: Record<string, unknown> = {};
  for (const [field, inner] of Object.entries(value)) {
    if ((field === "text" || field === "html") && typeof inner === "string" && inner.length > MAX_BODY_CHARS) {
      marked[field] = untrusted(inner.slice(0, MAX_BODY_CHARS));
      marked[`${field}Chars`] = inner.length;
    } else marked[field] = markUntrusted(inner, field);
  }
  return marked;
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

/** The fields of an attachment its sender wrote: its name, Content-ID and declared type. */
const attachmentTextFields = ["name", "contentId", "contentType"];

function markAttachment(attachment: unknown): unknown {
  if (typeof attachment !== "object" || attachment === null) return attachment;
  const { content: _, ...rest } = attachment as Record<string, unknown>;
  return Object.fromEntries(Object.entries(rest).map(([field, inner]) => [field, attachmentTextFields.includes(field) && typeof inner === "string" ? untrusted(inner) : inner]));
}
