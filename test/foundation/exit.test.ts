// The process's exit waits for its output: a reader of its pipe (journald, a parent process, the
// tests' harness) gets every line written before the exit, the last log line included.
import { expect, test } from "bun:test";
import { join } from "node:path";

const exitModule = join(import.meta.dir, "../../src/exit.ts");
const lines = 3_000;

/**
 * A child that writes about 300 kB to stdout and to stderr, more than a pipe holds, then exits with
 * 3 through `exit`; both go into one shell pipe whose reader starts 300 ms late. What the child
 * got through, and its exit code.
 */
async function childWriting(exit: "exitOnceWritten" | "process.exit"): Promise<{ lines: string[]; code: number }> {
  const script = `
    import { exitOnceWritten } from ${JSON.stringify(exitModule)};
    for (let i = 0; i < ${lines}; i++) {
      process.stdout.write("out " + i + " " + "x".repeat(90) + "\\n");
      process.stderr.write("err " + i + " " + "x".repeat(90) + "\\n");
    }
    process.stderr.write("last line\\n");
    ${exit === "exitOnceWritten" ? "exitOnceWritten(3)" : "process.exit(3)"};`;
  const shell = Bun.spawn(["bash", "-c", 'set -o pipefail; "$0" -e "$1" 2>&1 | (sleep 0.3; cat)', process.execPath, script], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
  const [output, code] = await Promise.all([new Response(shell.stdout).text(), shell.exited]);
  return { lines: output.split("\n").filter(Boolean), code };
}

test("every line written before the exit reaches a reader that is slow to read", async () => {
  const { lines: received, code } = await childWriting("exitOnceWritten");
  expect(code).toBe(3);
  expect(received).toHaveLength(2 * lines + 1);
  expect(received).toContain("last line");
});

test("the reference: process.exit alone drops what the pipe could not take yet", async () => {
  const { lines: received, code } = await childWriting("process.exit");
  expect(code).toBe(3);
  expect(received.length).toBeLessThan(2 * lines + 1);
});
