// DKIM "relaxed" canonicalization (RFC 6376 §3.4.2 header fields, §3.4.4 body) of a message as it
// goes on the wire. Works on the bytes as latin1 strings: every byte stays one character, so 8-bit
// and UTF-8 content passes through unchanged, and only SP, HTAB, CR and LF (all ASCII) are touched.

/** One header field as it appears in the message: its name, and its whole text (name, colon, value, folds). */
export interface HeaderField {
  name: string;
  /** The field's lines joined without their line breaks (the leading WSP of each fold stays). */
  unfolded: string;
}

export interface SplitMessage {
  fields: HeaderField[];
  /** Everything after the empty line that ends the header (latin1); "" when there is none. */
  body: string;
}

// The SMTP client sends every bare CR and bare LF as CRLF (nodemailer's DataStream), so a verifier
// sees each of the three as one line break: so must the signer.
// (A CR directly before an LF is the CRLF, never a bare CR and a bare LF.)
const LINE_BREAK = /\r\n|\r(?!\n)|\n/;
const HEADER_END = /(?:\r\n|\r(?!\n)|\n){2}/;

/** Splits a raw message into its header fields and its body (RFC 5322 §2.1, §2.2.3). */
export function splitMessage(raw: Uint8Array): SplitMessage {
  // A view, not a copy: bun:sqlite hands out BLOBs as plain Uint8Arrays, whose toString() ignores the encoding.
  const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("latin1");
  const end = HEADER_END.exec(text);
  const header = end ? text.slice(0, end.index) : text;
  const body = end ? text.slice(end.index + end[0].length) : "";
  const fields: HeaderField[] = [];
  for (const line of header.split(LINE_BREAK)) {
    const last = fields[fields.length - 1];
    // RFC 5322 §2.2.3: a line that starts with WSP continues the field above it.
    if (last && (line.startsWith(" ") || line.startsWith("\t"))) {
      last.unfolded += line;
      continue;
    }
    const colon = line.indexOf(":");
    fields.push({ name: trimWhitespaceEnd(colon < 0 ? line : line.slice(0, colon)), unfolded: line });
  }
  return { fields, body };
}

/**
 * RFC 6376 §3.4.2: the name lower-cased, folds removed (already, by splitMessage), runs of WSP as
 * one SP, no WSP at the end of the value or around the colon. Without a trailing CRLF.
 */
export function relaxedHeader(unfolded: string): string {
  const colon = unfolded.indexOf(":");
  const name = trimWhitespaceEnd(colon < 0 ? unfolded : unfolded.slice(0, colon)).toLowerCase();
  const value = colon < 0 ? "" : collapseWhitespace(unfolded.slice(colon + 1)).replace(/^ /, "").replace(/ $/, "");
  return `${name}:${value}`;
}

/**
 * RFC 6376 §3.4.4: in each line, WSP at its end removed and other runs of WSP as one SP; empty lines
 * at the end removed; a CRLF after the last line. An empty body stays empty (RFC 6376 erratum 3133).
 */
export function relaxedBody(body: string): string {
  const lines = body.split(LINE_BREAK).map((line) => collapseWhitespace(line).replace(/ $/, ""));
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines.length === 0 ? "" : lines.join("\r\n") + "\r\n";
}

// One pass, no backtracking: a run of WSP always matches as a whole, so a long run costs linear time.
const collapseWhitespace = (text: string) => text.replace(/[ \t]+/g, " ");

/** Without the SP and HTAB at its end (not String.trimEnd, which also takes other characters). A loop, where /[ \t]+$/ would backtrack over every run of WSP. */
function trimWhitespaceEnd(text: string): string {
  let end = text.length;
  while (end > 0 && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--;
  return text.slice(0, end);
}
