// RFC 8601 §5: an Authentication-Results field that names our authserv-id arrived forged and is
// removed; others stay. The authserv-id is read past comments however the sender writes them.
import { describe, expect, test } from "bun:test";
import { withinTime } from "../fuzz/budget";
import { withoutForgedTraceFields } from "../../src/smtp/trace";

const authservId = "mx.inboxd.test";
const body = "From: a@sender.test\r\nSubject: hi\r\n\r\nbody\r\n";

/** The Authentication-Results values that survive, in order. */
function kept(...values: string[]): string[] {
  const raw = Buffer.from(`${values.map((value) => `Authentication-Results:${value}\r\n`).join("")}${body}`, "latin1");
  const text = withoutForgedTraceFields(raw, authservId).toString("latin1");
  expect(text.endsWith(body)).toBe(true);
  return [...text.matchAll(/^Authentication-Results:(.*)\r\n/gm)].map((match) => match[1]!);
}

describe("forged Authentication-Results", () => {
  test("ours is removed however it is spelled: case, the root's trailing dot, comments before or after, a version, a quoted id, folding", () => {
    const forged = [
      " MX.INBOXD.TEST; spf=pass",
      " (checked) mx.inboxd.test; dkim=pass",
      " (outer (nested) comment) mx.inboxd.test; dkim=pass",
      " (a \\) quoted paren) mx.inboxd.test; spf=pass",
      " mx.inboxd.test(comment); spf=pass",
      " mx.inboxd.test 1; spf=pass",
      ' "mx.inboxd.test"; spf=pass',
      "\r\n\tmx.inboxd.test;\r\n\tspf=pass",
      " mx.inboxd.test",
      " MX.INBOXD.TEST.; dkim=pass header.d=bank.example",
      ' "mx.inboxd.test."; spf=pass',
    ];
    expect(kept(...forged)).toEqual([]);
  });

  test("another receiver's, and one that only mentions our name later, stay", () => {
    const others = [" mx.elsewhere.test; spf=pass", " (mx.inboxd.test) mx.elsewhere.test; spf=pass", " mx.elsewhere.test; spf=pass smtp.helo=mx.inboxd.test", " mx.inboxd.test.evil; spf=pass", ' "mx.inboxd.test x"; spf=pass', " mx.inboxd.test..; spf=pass"];
    expect(kept(...others)).toEqual(others);
  });

  test("a field of 200 KiB of unclosed or nested comments is read in one pass", async () => {
    const hostile = [` ${"(".repeat(200 * 1024)}`, ` ${"(a".repeat(100 * 1024)}`, ` ${"()".repeat(100 * 1024)} mx.inboxd.test; spf=pass`, ` ${"\\(".repeat(100 * 1024)}`];
    const survivors = await withinTime("reading hostile Authentication-Results", () => kept(...hostile));
    expect(survivors).toEqual([hostile[0], hostile[1], hostile[3]]);
  });
});
