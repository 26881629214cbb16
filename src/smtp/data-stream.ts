// smtp-server's SMTP input parser with its data mode searching natively. The pinned version
// (3.21.6) looks for a dot at the start of a line by a JavaScript loop over every byte of the
// message: about 35 ms of the event loop per 20 MB, which twenty large messages arriving at once
// spent in the same turns as every other session's commands and every API request. Here
// Buffer.indexOf finds each line-start dot (0.6 ms per 20 MB); what happens at one is the
// library's, case for case and in the same order, so the bytes written to the data stream, the
// end of the data and the commands that follow it are the same (test/fuzz/data-stream.test.ts
// compares the two on any input, cut into any chunks).
import { SMTPStream } from "smtp-server/lib/smtp-stream.js";

const LINE_START_DOT = Buffer.from("\n.");
// RFC 5321 §4.1.1.4: the data ends with a line holding a single dot.
const END_OF_DATA = Buffer.from("\r\n.\r\n");
const LONE_DOT_LINE = Buffer.from(".\r\n");
const DOT = 0x2e;
/** Bytes held back at a chunk's end: the start of an END_OF_DATA that the next chunk may finish. */
const HELD_BYTES = 4;
/** Bytes of a chunk looked at with the held ones: any line-start dot whose line break is held lies within them. */
const SEAM_BYTES = 16;

export class IndexedDataStream extends SMTPStream {
  override _feedDataStream(input: Buffer, done: (error?: Error | null) => void): void {
    const dataStream = this._dataStream!;
    let chunk = input;
    if (this._lastBytes && this._lastBytes.length) {
      chunk = this.joinHeldBytes(this._lastBytes, chunk);
      this._lastBytes = false;
    }
    // The first line is the only one without a line break before it (RFC 5321 §4.5.2). Only the
    // data's real first bytes count: an escape dot already taken makes the next dot content.
    if (this._atDataStart && chunk.length >= 3 && chunk.subarray(0, 3).equals(LONE_DOT_LINE)) return this._endDataMode(false, chunk.subarray(3), done);
    if (this._atDataStart && chunk.length >= 2 && chunk[0] === DOT && chunk[1] === DOT) {
      chunk = chunk.subarray(1);
      this._atDataStart = false;
    }
    // A dot at `at` is judged with the two bytes before it and after it, so the last two of the
    // chunk wait for the next one (they are among the held bytes).
    for (let lf = chunk.indexOf(LINE_START_DOT, 1); lf !== -1 && lf + 1 < chunk.length - 2; lf = chunk.indexOf(LINE_START_DOT, lf + 1)) {
      const at = lf + 1;
      if (chunk.subarray(at - 2, at + 3).equals(END_OF_DATA)) {
        const data = chunk.subarray(0, at);
        this._countDataBytes(data.length);
        return this._endDataMode(data, chunk.subarray(at + 3), done);
      }
      if (chunk[at + 1] === DOT) {
        const data = chunk.subarray(0, at);
        this._countDataBytes(data.length);
        if (dataStream.writable) dataStream.write(data);
        const rest = chunk.subarray(at + 1);
        // A turn per escape dot, as the library does: a message of dotted lines cannot hold the loop.
        setImmediate(() => this._feedDataStream(rest, done));
        return;
      }
    }
    this._lastBytes = chunk.length < HELD_BYTES ? chunk : chunk.subarray(chunk.length - HELD_BYTES);
    if (this._lastBytes.length >= chunk.length) return done();
    const data = chunk.subarray(0, chunk.length - this._lastBytes.length);
    this._countDataBytes(data.length);
    if (!dataStream.writable || dataStream.write(data) || dataStream.destroyed) return done();
    // A stream that the application destroys never drains, it only closes.
    const resume = () => {
      dataStream.removeListener("drain", resume);
      dataStream.removeListener("close", resume);
      done();
    };
    dataStream.once("drain", resume);
    dataStream.once("close", resume);
  }

  /**
   * The bytes held back from the last chunk, followed by this one: the library copies the two into
   * one buffer, every chunk of the message (13-18 ms per 20 MB, mostly allocation). When no dot
   * starts a line where they meet, and the held bytes are not the start of the data, they are
   * written to the data first, and the chunk goes on alone: the same bytes, in two writes.
   */
  private joinHeldBytes(held: Buffer, chunk: Buffer): Buffer {
    if (this._atDataStart || chunk.length < SEAM_BYTES) return Buffer.concat([held, chunk]);
    const seamDot = Buffer.concat([held, chunk.subarray(0, SEAM_BYTES)]).indexOf(LINE_START_DOT, 1);
    if (seamDot !== -1 && seamDot <= held.length) return Buffer.concat([held, chunk]);
    this._countDataBytes(held.length);
    if (this._dataStream!.writable) this._dataStream!.write(held);
    return chunk;
  }
}
