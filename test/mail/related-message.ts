/** A received HTML message showing one inline image by its Content-ID (multipart/related, RFC 2387; cid: URLs, RFC 2392). */
export function relatedMessage(fields: { headers: string[]; html: string; image: Buffer; contentType: string; contentId: string; filename: string }): string {
  return [
    ...fields.headers,
    "MIME-Version: 1.0",
    'Content-Type: multipart/related; boundary="rel"',
    "",
    "--rel",
    "Content-Type: text/html; charset=utf-8",
    "",
    fields.html,
    "--rel",
    `Content-Type: ${fields.contentType}`,
    "Content-Transfer-Encoding: base64",
    `Content-ID: <${fields.contentId}>`,
    `Content-Disposition: inline; filename="${fields.filename}"`,
    "",
    fields.image.toString("base64"),
    "--rel--",
    "",
  ].join("\r\n");
}
