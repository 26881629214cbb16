// Fuzz target: MIME parsing of received messages (src/mail/parse.ts with the bounds of
// src/mail/limits.ts). parseMessage resolves for any bytes, or rejects with MessageLimitError past
// a limit; any other rejection, a call over the time ceiling or a result that holds far more
// memory than the message is a bug.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseAddress } from "../../src/mail/address";
import { MAX_HEADER_BYTES, MAX_MIME_PARTS, MessageLimitError } from "../../src/mail/limits";
import { parseMessage, type ParsedMessage } from "../../src/mail/parse";
import { fuzz, retainedBytes, settle, testTimeout, withinTime } from "./budget";
import { mimeMessage, mutated } from "./mime";

const MiB = 1024 * 1024;

/** `length` bytes of xorshift32 output from `seed`. */
function noise(seed: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed | 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** The contract of ParsedMessage that callers rely on, whatever the input. */
function expectWellFormed(parsed: ParsedMessage) {
  expect(typeof parsed.subject).toBe("string");
  for (const address of [parsed.from, ...parsed.to, ...parsed.cc, ...(parsed.replyTo ?? [])]) {
    if (address !== undefined) expect(parseAddress(address)?.address).toBe(address);
  }
  expect(Array.isArray(parsed.references)).toBe(true);
  if (parsed.date !== undefined) expect(Number.isNaN(parsed.date.getTime())).toBe(false);
  for (const attachment of parsed.attachments) expect(Buffer.isBuffer(attachment.content)).toBe(true);
  expect(parsed.attachments.length).toBeLessThanOrEqual(MAX_MIME_PARTS);
  for (const [name, values] of parsed.headers) {
    expect(name).toBe(name.toLowerCase());
    for (const value of values) expect(typeof value).toBe("string");
  }
}

async function parsesWithinBounds(raw: Buffer) {
  const outcome = await withinTime(`parseMessage of ${raw.length} bytes`, () => settle(parseMessage(raw)));
  if (outcome.ok) expectWellFormed(outcome.value);
  else expect(outcome.error).toBeInstanceOf(MessageLimitError);
}

describe("fuzz: parseMessage", () => {
  test(
    "random bytes",
    async () => {
      await fuzz("parse/random-bytes", fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), (bytes) => parsesWithinBounds(Buffer.from(bytes))));
    },
    testTimeout(),
  );

  test(
    "random header fields and MIME structures",
    async () => {
      await fuzz("parse/mime-structure", fc.asyncProperty(mimeMessage, parsesWithinBounds));
    },
    testTimeout(),
  );

  test(
    "mutated MIME structures",
    async () => {
      await fuzz("parse/mime-mutated", fc.asyncProperty(mutated(mimeMessage), parsesWithinBounds));
    },
    testTimeout(),
  );

  // RFC 2045 §6.7 (3): white space at the end of an encoded line is removed, and inside one kept.
  // libqp before 3.0 rescanned such a run from each of its positions: 160 KiB took 15 s, and
  // the analysis of a message (30 s at most, five tries) could be held that long by every such line.
  test("a run of white space in a quoted-printable line decodes in linear time", async () => {
    for (const space of [" ", "\t", " \t"]) {
      const run = space.repeat(MiB / 4 / space.length);
      const raw = Buffer.from(`Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\na${run}b\r\nc${run}\r\n`);
      const parsed = await withinTime(`parseMessage of ${raw.length} bytes`, () => parseMessage(raw));
      expect(parsed.text).toBe(`a${run}b\nc\n`);
    }
  });

  // Inputs near 1 MiB, where a quadratic path or an unbounded copy shows: each is held to the
  // call ceiling, and what the result keeps alive to a small multiple of the input.
  test(
    "large messages stay within time and memory",
    async () => {
      const large = fc.oneof(
        // fast-check draws arrays element by element, far too slowly for a MiB: a seed stands in.
        fc.tuple(fc.integer(), fc.boolean()).map(([from, withHeader]) => Buffer.concat([Buffer.from(withHeader ? "Content-Type: text/plain; charset=iso-2022-jp\r\n\r\n" : ""), noise(from, MiB)])),
        // One field folded into many lines, below and above the header bound.
        fc.tuple(fc.integer({ min: MAX_HEADER_BYTES / 2, max: 2 * MAX_HEADER_BYTES }), fc.constantFrom("\r\n ", "\n\t", "\r\n")).map(([size, fold]) => Buffer.from(`Subject: ${"word ".repeat(8) + fold}`.repeat(Math.ceil(size / 48)) + "\r\n\r\nbody\r\n")),
        // Nested markup and no text part: the HTML-to-text conversion.
        fc.constantFrom("<div>", "<table><tr><td>", "<ul><li>", "<b><i>", "<p>x").map((tag) => Buffer.from(`Content-Type: text/html\r\n\r\n${tag.repeat(Math.floor(MiB / tag.length))}`)),
        // Many parts, below and above the part bound.
        fc.integer({ min: MAX_MIME_PARTS - 10, max: 4 * MAX_MIME_PARTS }).map((n) => Buffer.from(`Content-Type: multipart/mixed; boundary=b\r\n\r\n${"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n".repeat(n)}--b--\r\n`)),
        // Deep nesting, each level its own boundary.
        fc.integer({ min: 100, max: 2000 }).map((depth) => {
          const opens = Array.from({ length: depth }, (_, i) => `Content-Type: multipart/mixed; boundary=b${i}\r\n\r\n--b${i}\r\n`).join("");
          return Buffer.from(`${opens}Content-Type: text/plain\r\n\r\nleaf\r\n`);
        }),
        // A 1 MiB attachment in base64 and one in quoted-printable.
        fc.constantFrom("base64", "quoted-printable").map((cte) => {
          const content = cte === "base64" ? Buffer.alloc(700 * 1024, 0xa5).toString("base64").replace(/.{76}/g, "$&\r\n") : "=E9=\r\n".repeat(MiB / 6);
          return Buffer.from(`Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: ${cte}\r\n\r\n${content}\r\n--b--\r\n`);
        }),
        // Thousands of encoded words in one Subject.
        fc.constantFrom("=?utf-8?B?w6k=?= ", "=?iso-2022-jp?B?GyRCRnxLXDhsGyhC?= ", "=?x-unknown?Q?a?= ").map((word) => Buffer.from(`Subject: ${word.repeat(Math.floor((MAX_HEADER_BYTES - 1024) / word.length))}\r\n\r\nbody\r\n`)),
        // Many address fields with many addresses.
        fc.constant(Buffer.from(`To: ${"a@b.example, ".repeat(18_000)}c@d.example\r\n\r\nbody\r\n`)),
      );
      await fuzz(
        "parse/large",
        fc.asyncProperty(large, async (raw) => {
          const { result, bytes } = await retainedBytes(() => withinTime(`parseMessage of ${raw.length} bytes`, () => settle(parseMessage(raw))));
          if (result.ok) expectWellFormed(result.value);
          else expect(result.error).toBeInstanceOf(MessageLimitError);
          expect(bytes).toBeLessThan(8 * raw.length + 32 * 1024 * 1024);
        }),
        { ciRuns: 40 },
      );
    },
    testTimeout(),
  );
});
