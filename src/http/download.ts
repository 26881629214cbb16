/**
 * Headers for untrusted files served as downloads: never rendered inline at the API's origin,
 * never sniffed into HTML, and sandboxed (no script, no same-origin) should a browser show them anyway.
 */

/** type/subtype only (RFC 9110 §8.3.1 tokens); parameters and anything malformed give octet-stream. */
const mediaType = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+/i;

/** RFC 8187 §3.2.1 attr-char: what may stay unencoded in `filename*`. */
const encodeExtValue = (value: string) => encodeURIComponent(value).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * `attachment` with the name twice (RFC 6266 §4.3): `filename*` in UTF-8 (RFC 8187) for every
 * client that reads it, and a plain ASCII `filename` for those that do not. Path separators and
 * control characters go from both.
 */
export function attachmentDisposition(name: string | undefined): string {
  const safe = (name ?? "").replace(/[\u0000-\u001f\u007f/\\]/g, "_").trim() || "attachment";
  const ascii = safe.replace(/[^\x20-\x7e]|["%]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeExtValue(safe)}`;
}

export function downloadHeaders(name: string | undefined, contentType: string | undefined): Record<string, string> {
  return {
    "content-type": contentType?.trim().match(mediaType)?.[0].toLowerCase() ?? "application/octet-stream",
    "content-disposition": attachmentDisposition(name),
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox",
    "cache-control": "private, no-store",
  };
}
