// What a value a stranger chose can do to a log line: nothing but be one field of it. Terminal
// controls are escaped in both formats (a text log shown by `tail -f` or `less -R` was made to
// erase its line and print a forged one), and a long value is cut.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/log";

function lineOf(format: "text" | "json", fields: Record<string, unknown>): string {
  const lines: string[] = [];
  createLogger(format, "info", (line) => lines.push(line)).info("tls report received", fields);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

const forged = "\x1b[2K\x1b[1G2026-11-27T21:00:00.000Z\x1b[1CWARN\x1b[2Clogin\x1b[1Csucceeded";
const controls = ["\x1b", "\x07", "\x08", "\r", "\n", "\x7f", "\x9b", "\x85", "\u2028", "\u2029"];

describe("log lines", () => {
  test.each(["text", "json"] as const)("%s: no terminal control is written raw, C0, DEL, C1 or a line separator; the value reads back whole", (format) => {
    for (const value of [forged, ...controls.map((c) => `a${c}b`)]) {
      const line = lineOf(format, { from: value });
      expect([...line].filter((c) => /[\x00-\x1f\x7f-\x9f\u2028\u2029]/.test(c))).toEqual([]);
      const read = format === "json" ? JSON.parse(line).from : JSON.parse(line.slice(line.indexOf("from=") + "from=".length));
      expect(read).toBe(value);
    }
  });

  test("text: a plain value stays unquoted, numbers, booleans and null too; an object is a JSON string", () => {
    expect(lineOf("text", { domain: "reports.example" })).toEndWith(" tls report received domain=reports.example");
    expect(lineOf("text", { status: 401, ms: 1.7, cached: false, code: null, detail: { a: 1 } })).toEndWith(' status=401 ms=1.7 cached=false code=null detail="{\\"a\\":1}"');
  });

  test.each(["text", "json"] as const)("%s: a value is cut at 4,096 characters, saying how many more there were", (format) => {
    const line = lineOf(format, { domains: "d".repeat(1_000_000) });
    expect(line.length).toBeLessThan(4_300);
    expect(line).toContain(`${"d".repeat(4096)}… (995904 more characters)`);
  });

  test.each(["text", "json"] as const)("%s: an error's stack and an object's JSON are cut too, and a failed statement's values left out", (format) => {
    const body = "message body ".repeat(100_000);
    const failed = new Error(`Failed query: insert into "messages" values (?, ?)\nparams: msg_1,${body}\nthe wire code is 4471-SECRET\n${body}`);
    const line = lineOf(format, { error: failed, nested: { domains: "d".repeat(100_000) } });
    expect(line.length).toBeLessThan(2 * 4_300);
    expect(line).toContain("params: (left out)");
    expect(line).not.toContain("message body");
    expect(line).not.toContain("4471-SECRET");
    // The stack stays: where the statement failed.
    if (format === "text") expect(line).toContain("at ");
  });

  test.each(["text", "json"] as const)("%s: an error's causes follow it with their codes (why the statement failed), its values still left out", (format) => {
    const driver = Object.assign(new Error("canceling statement due to statement timeout"), { errno: "57014" });
    const failed = new Error('Failed query: select "id" from "inboxes" for no key update\nparams: org_1,inb_2', { cause: driver });
    const line = lineOf(format, { error: failed });
    expect(line).toContain("caused by: canceling statement due to statement timeout (57014)");
    expect(line).not.toContain("inb_2");
  });
});
