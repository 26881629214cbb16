// mailauth ships no types for its DKIM message parser; this declares what test/fuzz reads of it.
declare module "mailauth/lib/dkim/message-parser" {
  import { Writable } from "node:stream";
  export class MessageParser extends Writable {
    byteLength: number;
    messageHeaders(headers: { original: Buffer }): Promise<void>;
    nextChunk(chunk: Buffer): Promise<void>;
    finalChunk(): Promise<void>;
    writeAsync(chunk: Buffer): Promise<void>;
    finish(): Promise<void>;
  }
}
