// Fuzz target: the SMTP input parser's data mode (src/smtp/data-stream.ts) against the library's
// own (smtp-server's SMTPStream), on the same input cut into the same chunks: the same bytes reach
// each message's data stream, the data ends at the same place, and the same commands follow it.
// The input is built of the pieces that decide where data ends: line breaks, dots, doubled dots,
// the terminator, and command lines after it.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SMTPStream } from "smtp-server/lib/smtp-stream.js";
import { IndexedDataStream } from "../../src/smtp/data-stream";
import { fuzz, testTimeout } from "./budget";
import { chunksOf, cutAnywhere } from "./cuts";

/** What a parser did with the input: per message its data and byte count, and every command line. */
async function transcript(parser: SMTPStream, chunks: Buffer[], maxBytes: number): Promise<string[]> {
  const events: string[] = [];
  const startData = () => {
    const data: Buffer[] = [];
    const stream = parser.startDataMode(maxBytes);
    stream.on("data", (chunk: Buffer) => data.push(chunk));
    stream.on("end", () => {
      events.push(`data ${JSON.stringify(Buffer.concat(data).toString("latin1"))} bytes ${stream.byteLength} exceeded ${stream.sizeExceeded}`);
      parser.continue();
    });
  };
  parser.oncommand = (command, callback) => {
    const line = command.toString("latin1");
    events.push(`command ${JSON.stringify(line)}`);
    if (line !== "DATA") return callback?.();
    startData();
    // As the server answers DATA in a later turn: a continue() that ran the next message's data
    // to its end inside itself would drop the continuation that end left (smtp-server 3.21.6).
    setImmediate(() => callback?.());
  };
  startData();
  const finished = new Promise((resolve) => parser.once("finish", resolve));
  for (const chunk of chunks) parser.write(chunk);
  parser.end();
  await finished;
  return events;
}

const piece = fc.constantFrom("\r\n", ".", "..", "...", "\r\n.\r\n", "\r\n..\r\n", ".\r\n", "\n", "\r", "\n.", "a", "xyz", "DATA\r\n", "NOOP\r\n");
const input = fc.array(piece, { maxLength: 40 }).map((pieces) => Buffer.from(pieces.join(""), "latin1"));
const cutInput = cutAnywhere(input);

describe("fuzz: the SMTP data mode", () => {
  test(
    "reads any input, cut anywhere, as smtp-server's own parser does",
    async () => {
      await fuzz(
        "data-stream/as-the-library",
        fc.asyncProperty(cutInput, fc.constantFrom(8, 1024), async ([bytes, cuts], maxBytes) => {
          const chunks = chunksOf(bytes, cuts);
          const expected = await transcript(new SMTPStream(), chunks, maxBytes);
          expect({ input: bytes.toString("latin1"), chunks: chunks.length, events: await transcript(new IndexedDataStream(), chunks, maxBytes) }).toEqual({ input: bytes.toString("latin1"), chunks: chunks.length, events: expected });
        }),
        { minRuns: 300 },
      );
    },
    testTimeout(),
  );

  test("a 20 MB message of base64 lines arrives whole, its escaped dots unstuffed", async () => {
    const line = "QUJD".repeat(19);
    const lines = Array.from({ length: 270_000 }, (_, n) => (n % 1000 === 0 ? `.${line}` : line));
    const sent = Buffer.from(lines.map((text) => (text.startsWith(".") ? `.${text}` : text)).join("\r\n") + "\r\n.\r\nQUIT\r\n");
    const chunks = chunksOf(sent, Array.from({ length: 40 }, (_, n) => (n + 1) * 524_288 + n));
    const events = await transcript(new IndexedDataStream(), chunks, 25 * 1024 * 1024);
    expect(events).toEqual([`data ${JSON.stringify(lines.join("\r\n") + "\r\n")} bytes ${Buffer.byteLength(lines.join("\r\n")) + 2} exceeded false`, 'command "QUIT"']);
  });
});
