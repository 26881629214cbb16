// Arbitraries for RFC 5322 / MIME messages as strangers send them: header fields real and
// invented, folded or not, encoded words in known and unknown charsets, any line ending, and
// nested multiparts whose boundaries may be missing, reused or never closed.
import fc from "fast-check";

export const lineEnding = fc.constantFrom("\r\n", "\r\n", "\r\n", "\n", "\r");

const HEADER_NAMES = ["From", "To", "Cc", "Reply-To", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Content-Type", "Content-Transfer-Encoding", "Content-Disposition", "Content-ID", "MIME-Version", "Received", "X-Anything", "Sender", "Bcc"];
const CHARSETS = ["utf-8", "UTF-8", "iso-8859-1", "windows-1252", "iso-2022-jp", "shift_jis", "utf-7", "utf-16", "koi8-r", "gb2312", "x-unknown", "", "utf-8*en", "\"utf-8\""];

/** A header value: text, addresses, encoded words (RFC 2047) good and broken, parameters. */
export const headerValue = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: fc.constantFrom(..."<>@\",;:()[]\\=?. aZ09"), maxLength: 60 }),
  fc.tuple(fc.constantFrom(...CHARSETS), fc.constantFrom("B", "Q", "b", "q", "X"), fc.string({ maxLength: 40 })).map(([charset, encoding, text]) => {
    const payload = encoding.toUpperCase() === "B" ? Buffer.from(text).toString("base64") : text.replace(/[^A-Za-z0-9]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
    return `=?${charset}?${encoding}?${payload}?=`;
  }),
  fc.tuple(fc.string({ maxLength: 20 }), fc.emailAddress()).map(([name, address]) => `"${name}" <${address}>`),
  fc.array(fc.emailAddress(), { maxLength: 5 }).map((list) => list.join(", ")),
  fc.constantFrom("undisclosed-recipients:;", "group: a@b.example, <c@d.example>;", "<>", "<@route:a@b.example>", "a@[192.0.2.1]", "\"\\\"\"@x.example"),
  fc.tuple(fc.constantFrom("text/plain", "multipart/mixed", "message/rfc822", "a/b"), fc.array(fc.tuple(fc.constantFrom("charset", "name", "boundary", "filename*", "filename*0*", "name*1"), fc.string({ maxLength: 20 })), { maxLength: 3 })).map(
    ([type, params]) => [type, ...params.map(([k, v]) => `${k}="${v}"`)].join("; "),
  ),
  fc.date({ noInvalidDate: false }).map((date) => (Number.isNaN(date.getTime()) ? "not a date" : date.toUTCString())),
);

/** One field, maybe folded (RFC 5322 §2.2.3) at random points, with the given line ending. */
export const headerField = fc
  .tuple(fc.oneof(fc.constantFrom(...HEADER_NAMES), fc.string({ unit: "binary-ascii", minLength: 0, maxLength: 12 })), headerValue, fc.array(fc.nat(), { maxLength: 3 }), lineEnding, fc.constantFrom(" ", "\t", "  "))
  .map(([name, value, folds, eol, ws]) => {
    let text = value;
    for (const at of folds) {
      const i = text.length === 0 ? 0 : at % text.length;
      text = `${text.slice(0, i)}${eol}${ws}${text.slice(i)}`;
    }
    return `${name}: ${text}${eol}`;
  });

const body = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString("latin1")),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString("base64").replace(/.{1,76}/g, "$&\r\n")),
  fc.string({ unit: fc.constantFrom(..."=\r\n ab3F=?\t"), maxLength: 200 }),
  fc.constantFrom("<html><body><p>hi</p></body></html>", "<div>".repeat(200), "<table><tr><td>x", "begin 644 a.txt\r\n#86)C\r\n`\r\nend\r\n"),
);

type Part = { kind: "leaf"; type: string; charset: string; encoding: string; disposition: string; body: string } | { kind: "multi"; subtype: string; boundary: string; closed: boolean; preamble: string; parts: Part[] } | { kind: "embedded"; inner: Part };

const leaf = fc.record({
  kind: fc.constant("leaf" as const),
  type: fc.constantFrom("text/plain", "text/html", "application/octet-stream", "image/png", "message/delivery-status", "text/rfc822-headers", "text/calendar", "TEXT/PLAIN", "bogus"),
  charset: fc.constantFrom(...CHARSETS),
  encoding: fc.constantFrom("7bit", "8bit", "base64", "quoted-printable", "binary", "x-uuencode", "BASE64", "bogus", ""),
  disposition: fc.constantFrom("", "inline", "attachment", 'attachment; filename="a.pdf"', "attachment; filename*=utf-8''%E2%82%AC.txt", "inline; filename=\"=?utf-8?B?w6k=?=\""),
  body,
});

const { part } = fc.letrec<{ part: Part }>((tie) => ({
  part: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.record({
      kind: fc.constant("multi" as const),
      subtype: fc.constantFrom("mixed", "alternative", "related", "report", "signed", "digest"),
      boundary: fc.oneof(fc.constantFrom("b", "b1", "=_b", "", "--", "a b"), fc.string({ unit: "binary-ascii", maxLength: 70 })),
      closed: fc.boolean(),
      preamble: fc.constantFrom("", "This is a MIME message.\r\n"),
      parts: fc.array(tie("part"), { maxLength: 4 }),
    }),
    tie("part").map((inner) => ({ kind: "embedded" as const, inner })),
  ),
}));

function render(p: Part, eol: string): string {
  switch (p.kind) {
    case "leaf": {
      const headers = [`Content-Type: ${p.type}${p.charset ? `; charset=${p.charset}` : ""}`];
      if (p.encoding) headers.push(`Content-Transfer-Encoding: ${p.encoding}`);
      if (p.disposition) headers.push(`Content-Disposition: ${p.disposition}`);
      return `${headers.join(eol)}${eol}${eol}${p.body}`;
    }
    case "multi": {
      const inner = p.parts.map((child) => `--${p.boundary}${eol}${render(child, eol)}${eol}`).join("");
      return `Content-Type: multipart/${p.subtype}; boundary="${p.boundary}"${eol}${eol}${p.preamble}${inner}${p.closed ? `--${p.boundary}--${eol}` : ""}`;
    }
    case "embedded":
      return `Content-Type: message/rfc822${eol}${eol}From: inner@example.com${eol}Subject: inner${eol}${render(p.inner, eol)}`;
  }
}

/** A whole message: random top-level fields, then a random MIME structure. */
export const mimeMessage = fc.tuple(fc.array(headerField, { maxLength: 12 }), part, lineEnding).map(([fields, structure, eol]) => Buffer.from(`${fields.join("")}${render(structure, eol)}`, "latin1"));

/** Bytes close to a message, then bent: flipped, cut, spliced, duplicated. */
export function mutated(base: fc.Arbitrary<Buffer>): fc.Arbitrary<Buffer> {
  const edit = fc.oneof(
    fc.record({ op: fc.constant("flip" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ op: fc.constant("cut" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 64 }) }),
    fc.record({ op: fc.constant("insert" as const), at: fc.nat(), bytes: fc.oneof(fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)), fc.constantFrom(...["\r\n", "\n\n", "\r\n\r\n", "--", ":", ";", "=?", "?=", "\r\n ", "\x00", "boundary=", "\"", "Content-Type: multipart/mixed; boundary=x\r\n"].map((s) => Buffer.from(s)))) }),
    fc.record({ op: fc.constant("duplicate" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 200 }) }),
    fc.record({ op: fc.constant("truncate" as const), at: fc.nat() }),
  );
  return fc.tuple(base, fc.array(edit, { minLength: 1, maxLength: 8 })).map(([bytes, edits]) => {
    let out = Buffer.from(bytes);
    for (const e of edits) {
      const at = out.length === 0 ? 0 : e.at % (out.length + 1);
      if (e.op === "flip" && out.length > 0) out[at % out.length] = e.value;
      else if (e.op === "cut") out = Buffer.concat([out.subarray(0, at), out.subarray(at + e.length)]);
      else if (e.op === "insert") out = Buffer.concat([out.subarray(0, at), e.bytes, out.subarray(at)]);
      else if (e.op === "duplicate") out = Buffer.concat([out.subarray(0, at + e.length), out.subarray(at)]);
      else if (e.op === "truncate") out = out.subarray(0, at);
    }
    return out;
  });
}
