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

/**
 * The same message in pieces, in order: the kept fields, each as `edit` makes it, then the rest of
 * `raw` itself, not a copy of it.
 */
export function headerFieldsKept(raw: Buffer, keep: (field: string) => boolean, { fields, end } = readHeaderBlock(raw), edit = (field: string) => field): [Buffer] | [Buffer, Buffer] {
  const kept: string[] = [];
  for (const field of fields) {
    if (keep(field)) kept.push(edit(field));
  }
  if (kept.length === fields.length && kept.every((field, at) => field === fields[at])) return [raw];
  return [Buffer.from(kept.join(""), "latin1"), raw.subarray(end)];
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const eightBit = /[\x80-\xff]/;

/**
 * An edit for headerFieldsKept that gives raw 8-bit text which is not UTF-8 as UTF-8. RFC 6532
 * allows raw 8-bit text in header fields only as UTF-8, but older mail programs write their own
 * charset there unencoded, and read as UTF-8 each such letter became U+FFFD ("Caf\u{FFFD}"). As
 * mail readers do, such a field is read in the charset the message declares (Content-Type),
 * else windows-1252, the superset of Latin-1 that WHATWG reads "iso-8859-1" as.
 */
export function legacyHeaderText(fields: string[]): (field: string) => string {
  let fallback: TextDecoder | undefined;
  return (field) => {
    if (!eightBit.test(field)) return field;
    const bytes = Buffer.from(field, "latin1");
    try {
      utf8.decode(bytes);
      return field;
    } catch {
      fallback ??= declaredCharset(fields);
      return Buffer.from(fallback.decode(bytes), "utf8").toString("latin1");
    }
  };
}

/** The top-level Content-Type's charset when it is a legacy one the runtime reads, else windows-1252. */
function declaredCharset(fields: string[]): TextDecoder {
  const contentType = fields.find((field) => fieldName(field) === "content-type");
  const label = contentType?.match(/;\s*charset\s*=\s*"?([\w.:-]+)/i)?.[1];
  try {
    // Any WHATWG label: an unknown one throws.
    const decoder = new TextDecoder((label ?? "windows-1252") as ConstructorParameters<typeof TextDecoder>[0]);
    if (decoder.encoding !== "utf-8" && !decoder.encoding.startsWith("utf-16")) return decoder;
  } catch {}
  return new TextDecoder("windows-1252");
}
