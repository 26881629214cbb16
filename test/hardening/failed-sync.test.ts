// Commits the embedded engine made but could not sync to disk: no caller is told they failed (a
// retried send would go out twice) nor that they are durable; the server stops and says why, and
// its service manager starts it again on what the disk holds.
import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { onPostgres, register, startChildServer, tempDir, testEnv } from "../harness";
import { openSession, startTransaction } from "../smtp/raw-client";

test.skipIf(onPostgres)("a WAL deleted under the running server: the message is not acknowledged, and the server stops with 1, saying why", async () => {
  const dir = tempDir("failed-sync");
  const child = await startChildServer(testEnv(dir));
  try {
    const { inbox } = await register(child.api);
    const session = await openSession(child.smtpPort!);
    await startTransaction(session, "alice@sender.test", [inbox.email]);
    expect((await session.command("DATA")).code).toBe(354);
    rmSync(join(dir, "inboxd.db-wal"));
    // Committed into a file the next start will not see: before, 250.
    const reply = await session.command("Subject: lost\r\n\r\nHello.\r\n.").catch((error: Error) => error.message);
    expect(reply).toStartWith("the connection closed");
    expect(await child.proc.exited).toBe(1);
    expect(child.output()).toContain("the database's commits could not be synced to disk: stopping");
    expect(child.output()).toContain("was deleted or replaced while inboxd runs");
  } finally {
    if (child.proc.exitCode === null) await child.kill("SIGKILL");
  }
});
