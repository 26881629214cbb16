// Attachments' base64 is checked and decoded a slice per turn of the event loop
// (src/messages/outgoing.ts): what is refused and what decodes must not depend on where the slices fall.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { decodeAttachments } from "../../src/messages/outgoing";

const SLICE = 1024 * 1024;
const decode = async (content: string) => (await decodeAttachments([{ content, name: "a.bin" }]))[0]!.content;

describe("attachment base64 decoded in slices", () => {
  test("bytes of any length over several slices come back exactly, with or without padding and line breaks", async () => {
    for (const length of [0, 1, 2, 3, (SLICE / 4) * 3, (SLICE / 4) * 3 + 1, 2 * SLICE + 5]) {
      const bytes = randomBytes(length);
      const base64 = bytes.toString("base64");
      expect(Buffer.compare(await decode(base64), bytes)).toBe(0);
      expect(Buffer.compare(await decode(base64.replace(/=+$/, "")), bytes)).toBe(0);
      expect(Buffer.compare(await decode(base64.replace(/.{76}/g, "$&\r\n")), bytes)).toBe(0);
    }
  });

  test("a character outside the alphabet, or padding before the end, is refused in any slice", async () => {
    const base64 = randomBytes(3 * SLICE).toString("base64");
    for (const at of [0, SLICE - 1, SLICE, SLICE + 1, 3 * SLICE, base64.length - 1]) {
      for (const bad of ["!", "="]) {
        const content = base64.slice(0, at) + bad + base64.slice(at + 1);
        if (bad === "=" && at === base64.length - 1) continue;
        await expect(decode(content)).rejects.toThrow("attachments[0].content: must be base64");
      }
    }
    // Padding that would be sound at the end of the data, ending a slice that is not the last.
    await expect(decode(base64.slice(0, SLICE - 4) + "QQ==" + base64.slice(SLICE))).rejects.toThrow("must be base64");
    await expect(decode("QUJDR")).rejects.toThrow("must be base64");
  });
});
