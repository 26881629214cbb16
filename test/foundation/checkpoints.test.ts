// WAL checkpoints while inboxd serves: made by a thread of their own, never inside a commit on the
// event loop; commits checkpoint again once the server stops.
import { expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { startTestServer } from "../harness";

const autocheckpoint = (sqlite: import("bun:sqlite").Database) => sqlite.query<{ wal_autocheckpoint: number }, []>("PRAGMA wal_autocheckpoint").get()!.wal_autocheckpoint;

async function until(condition: () => boolean, timeoutMs = 5000) {
  for (const deadline = Date.now() + timeoutMs; !condition(); await Bun.sleep(10)) {
    if (Date.now() > deadline) throw new Error("timed out");
  }
}

test("the checkpoint thread copies the WAL into the database file; commits on the event loop do not", async () => {
  const server = await startTestServer();
  const { sqlite } = server.app.store;
  const databaseFile = join(server.dataDir, "inboxd.db");
  try {
    await until(() => autocheckpoint(sqlite) === 0);
    sqlite.exec("CREATE TABLE filler (b BLOB)");
    const before = statSync(databaseFile).size;
    // 8 MiB: far past the 1000 pages at which a commit would checkpoint by itself.
    const insert = sqlite.query("INSERT INTO filler VALUES (?)");
    for (let i = 0; i < 64; i++) sqlite.transaction(() => insert.run(Buffer.alloc(128 * 1024, i)))();
    await until(() => statSync(databaseFile).size >= before + 8 * 1024 * 1024);
  } finally {
    await server.stop();
  }
  await server.cleanup();
});

test("once the checkpoint thread stops, commits checkpoint the WAL themselves again", async () => {
  const server = await startTestServer();
  const { sqlite } = server.app.store;
  await until(() => autocheckpoint(sqlite) === 0);
  await server.running.parts.find((part) => part.name === "wal-checkpoints")!.stop();
  expect(autocheckpoint(sqlite)).toBe(1000);
  await server.cleanup();
});
