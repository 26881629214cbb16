/**
 * Text as every engine can hold it. PostgreSQL's text and jsonb cannot hold U+0000 (NUL), which
 * mail carries once decoded (quoted-printable `=00`, base64, an encoded word: the raw data refuses
 * it, RFC 6152 §3) and a peer may put in a reply or a response body: one such value failed the
 * whole transaction that recorded it, and every retry of it. It is removed where such text comes
 * in, on both engines alike; no mail or reply means anything by it.
 */
export function storableText(text: string): string;
export function storableText(text: string | undefined): string | undefined;
export function storableText(text: string | undefined): string | undefined {
  return text?.includes("\0") ? text.replaceAll("\0", "") : text;
}
