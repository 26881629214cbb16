// The top-level header fields of a raw message, for the few edits the receiver makes to them.
// Bytes are handled as latin1 text, so every octet survives the round trip unchanged.

export interface HeaderBlock {
  /** Each field with its folded continuation lines and its final CRLF (RFC 5322 §2.2.3). */
  fields: string[];
  /** Offset of what follows the header fields: the empty line and the body. */
  end: number;
}

export function readHeaderBlock(raw: Buffer): HeaderBlock {
  // A message that starts with the empty line has no header fields at all.
  const noFields = raw[0] === 0x0d && raw[1] === 0x0a;
  const blank = raw.indexOf("\r\n\r\n");
  const end = noFields ? 0 : blank === -1 ? raw.length : blank + 2;
  const fields = raw.subarray(0, end).toString("latin1").split(/(?<=\r\n)(?![ \t])/).filter(Boolean);
  return { fields, end };
}

/** The lower-case name of a field. */
export const fieldName = (field: string) => field.slice(0, Math.max(0, field.indexOf(":"))).trim().toLowerCase();

/** The message with only the header fields `keep` accepts, the body untouched; `block` is raw's, when read already. */
export function filterHeaderFields(raw: Buffer, keep: (field: string) => boolean, block = readHeaderBlock(raw)): Buffer {
  const pieces = headerFieldsKept(raw, keep, block);
  return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
}

/** The same message in pieces, in order: the kept fields, then the rest of `raw` itself, not a copy of it. */
export function headerFieldsKept(raw: Buffer, keep: (field: string) => boolean, { fields, end } = readHeaderBlock(raw)): [Buffer] | [Buffer, Buffer] {
  const kept = fields.filter(keep);
  if (kept.length === fields.length) return [raw];
  return [Buffer.from(kept.join(""), "latin1"), raw.subarray(end)];
}
