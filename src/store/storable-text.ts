/**
 * Text as every engine can hold it. PostgreSQL's text and jsonb cannot hold U+0000 (NUL), which
 * mail carries once decoded (quoted-printable `=00`, base64, an encoded word: the raw data refuses
 * it, RFC 6152 §3) and a peer may put in a reply or a response body: one such value failed the
 * whole transaction that recorded it, and every retry of it. It is removed where such text comes
 * in, on both engines alike; no mail or reply means anything by it. Anything but a string is
 * given back as it is: a parser's field is not always the string its types say.
 */
export const storableText = <T>(text: T): T => (typeof text === "string" && text.includes("\0") ? (text.replaceAll("\0", "") as T) : text);
