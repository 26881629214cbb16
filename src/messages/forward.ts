/**
 * What a forwarded message holds, as Gmail and most mail clients write it: the note, then a
 * "---------- Forwarded message ---------" block naming the original's From, Date, Subject, To
 * (and Cc), then the original body; in the text part and, when the note or the original has
 * HTML, in an HTML part too.
 */
import { detectMimeType } from "nodemailer/lib/mime-funcs";
import { isContentId } from "../mail/compose";
import { headerSafe } from "../mail/header-text";
import type { AttachmentRecord, MessageRecord } from "../store";
import type { OutgoingAttachment } from "./outgoing";

const SEPARATOR = "---------- Forwarded message ---------";

/**
 * `Fwd: ` once: a subject that already starts with `Fwd:` or `Fw:` (any case) is kept. Made safe as
 * the wire shows it (a received subject can decode to line breaks), as a reply's is (replySubject).
 */
export function forwardSubject(subject: string): string {
  const safe = headerSafe(subject);
  return /^fwd?:/i.test(safe.trim()) ? safe : `Fwd: ${safe}`;
}

/** The original's attachments, attached again; an inline part keeps its Content-ID, which the forwarded HTML refers to (`cid:`). */
export const forwardedAttachments = (rows: AttachmentRecord[]): OutgoingAttachment[] =>
  rows.map((row) => ({ name: row.name ?? undefined, contentType: row.contentType ?? detectMimeType(row.name ?? "bin"), content: row.content, ...(row.inline && row.contentId && isContentId(row.contentId) ? { contentId: row.contentId } : {}) }));

type Original = Pick<MessageRecord, "from" | "fromName" | "to" | "cc" | "subject" | "text" | "html" | "createdAt">;

/** The forward's text and html ("" when it has no HTML part): the note first, then the original. */
export function forwardBody(original: Original, note: { text: string; html: string }): { text: string; html: string } {
  const from = original.fromName ? `${original.fromName} <${original.from}>` : original.from;
  const fields: [string, string][] = [
    ["From", from],
    ["Date", new Date(original.createdAt).toUTCString()],
    ["Subject", original.subject],
    ["To", original.to.join(", ")],
  ];
  if (original.cc.length > 0) fields.push(["Cc", original.cc.join(", ")]);

  const originalText = original.text ?? "";
  const text = [note.text ? `${note.text}\n\n` : "", `${SEPARATOR}\n`, ...fields.map(([name, value]) => `${name}: ${value}\n`), "\n", originalText].join("");

  if (!note.html && !original.html) return { text, html: "" };
  const noteHtml = note.html || (note.text ? paragraphs(note.text) : "");
  const block = fields.map(([name, value]) => `${name}: ${name === "From" && original.fromName ? `<strong>${escapeHtml(original.fromName)}</strong> &lt;${escapeHtml(original.from)}&gt;` : escapeHtml(value)}<br>`).join("");
  const html = `${noteHtml ? `<div>${noteHtml}</div><br>` : ""}<div class="forwarded-message">${SEPARATOR}<br>${block}</div><br>${original.html || paragraphs(originalText)}`;
  return { text, html };
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** Plain text as HTML: escaped, line breaks kept. */
const paragraphs = (text: string) => escapeHtml(text).replace(/\r?\n/g, "<br>");
