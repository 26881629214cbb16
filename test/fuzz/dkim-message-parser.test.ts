// Fuzz target: mailauth's DKIM message parser as patches/mailauth+7.1.0.patch leaves it (the end of
// the header section found by Buffer.indexOf instead of a loop that copied an array at every byte;
// a chunk without a bare LF passed on whole) against the rules of the library's own code, written
// plainly over the whole input: every bare LF becomes CRLF (the byte before it tracked across
// chunks), and the header section ends with the first empty line (RFC 5322 §2.1), or at once when
// the input starts with one. The input is built of the pieces that decide both, cut anywhere.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { MessageParser } from "mailauth/lib/dkim/message-parser";
import { fuzz, testTimeout } from "./budget";
import { chunksOf, cutAnywhere } from "./cuts";

/** What the parser hands on: the header section, the body, and the bytes it counted. */
class Recorder extends MessageParser {
  header?: string;
  body: Buffer[] = [];
  override async messageHeaders(headers: { original: Buffer }) {
    this.header = headers.original.toString("latin1");
  }
  override async nextChunk(chunk: Buffer) {
    this.body.push(chunk);
  }
}

async function parsed(chunks: Buffer[]): Promise<{ header?: string; body: string; byteLength: number }> {
  const recorder = new Recorder();
  for (const chunk of chunks) await recorder.writeAsync(chunk);
  await recorder.finish();
  return { header: recorder.header, body: Buffer.concat(recorder.body).toString("latin1"), byteLength: recorder.byteLength };
}

function expected(input: string): { header: string; body: string; byteLength: number } {
  const text = input.replace(/(?<!\r)\n/g, "\r\n");
  const emptyLine = text.indexOf("\n\r\n");
  const header = text.startsWith("\r\n") ? "\r\n" : emptyLine === -1 ? text : text.slice(0, emptyLine + 3);
  return { header, body: text.slice(header.length), byteLength: text.length };
}

const piece = fc.constantFrom("\r\n", "\n", "\r", "\r\n\r\n", "\n\n", "\n\r\n", "\r\r\n", "Subject: x", " folded", "a", ":");
const cutInput = cutAnywhere(fc.array(piece, { maxLength: 30 }).map((pieces) => Buffer.from(pieces.join(""), "latin1")));

describe("fuzz: mailauth's DKIM message parser, patched", () => {
  test(
    "splits any input, cut anywhere, into the header section and body the library's rules give",
    async () => {
      await fuzz(
        "dkim-message-parser/as-the-rules",
        fc.asyncProperty(cutInput, async ([bytes, cuts]) => {
          const text = bytes.toString("latin1");
          expect({ input: text, ...(await parsed(chunksOf(bytes, cuts))) }).toEqual({ input: text, ...expected(text) });
        }),
        { minRuns: 300 },
      );
    },
    testTimeout(),
  );

  test("a LF at the start of a chunk after a CR at the end of the last is not bare", async () => {
    expect(await parsed([Buffer.from("A: b\r"), Buffer.from("\n\r"), Buffer.from("\nbody\n")])).toEqual({ header: "A: b\r\n\r\n", body: "body\r\n", byteLength: 14 });
  });
});
