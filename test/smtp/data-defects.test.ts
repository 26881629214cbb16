// Bare line breaks and NUL in message data are judged chunk by chunk as the data arrives
// (src/smtp/line-breaks.ts dataDefects): the verdict must not depend on where the chunks meet.
import { describe, expect, test } from "bun:test";
import { dataDefects } from "../../src/smtp/line-breaks";

function judged(chunks: Buffer[]) {
  const defects = dataDefects();
  for (const chunk of chunks) defects.read(chunk);
  return defects.end();
}

const cases: [string, string, ReturnType<typeof judged>][] = [
  ["sound data", "Subject: x\r\n\r\nline one\r\nline two\r\n", null],
  ["a bare LF in a line", "Subject: x\r\n\r\nbare \n here\r\n", "bare LF"],
  ["a bare LF first of all", "\nSubject: x\r\n", "bare LF"],
  ["a bare CR in a line", "Subject: x\r\n\r\nbare \r here\r\n", "bare CR"],
  ["a CR that ends the data", "Subject: x\r\n\r\nlast\r", "bare CR"],
  ["a CR doubled before its LF", "Subject: x\r\r\n", "bare CR"],
  ["a NUL", "Subject: x\r\n\r\nnul \0 here\r\n", "NUL"],
  ["a bare CR before a bare LF", "a\rb\r\nc\nd\r\n", "bare LF"],
  ["a NUL before a bare CR", "a\0b\r\nc\rd\r\n", "bare CR"],
];

describe("data defects judged chunk by chunk", () => {
  for (const [name, text, expected] of cases) {
    test(`${name}: ${expected ?? "accepted"} whole, and cut in two or three anywhere`, () => {
      const data = Buffer.from(text, "latin1");
      expect(judged([data])).toBe(expected);
      for (let first = 0; first <= data.length; first++) {
        expect({ first, verdict: judged([data.subarray(0, first), data.subarray(first)]) }).toEqual({ first, verdict: expected });
        for (let second = first; second <= data.length; second++) {
          expect({ first, second, verdict: judged([data.subarray(0, first), data.subarray(first, second), data.subarray(second)]) }).toEqual({ first, second, verdict: expected });
        }
      }
    });
  }
});
