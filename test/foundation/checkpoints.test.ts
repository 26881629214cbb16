// WAL checkpoints while inboxd serves: made by a thread of their own, never inside a commit on the
// event loop, which runs while there are writes to copy; commits checkpoint again once the server stops. The store's maintenance part (what
// the server starts first) runs here on a connection of the test's own, whose setting it checks.
import { afterAll, expect, test } from "bun:test";
import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/log";
import { startCheckpoints } from "../../src/store/sqlite/checkpoints";
import { createStore } from "../../src/store/sqlite/index";
import { migrate } from "../../src/store/sqlite/migrate";
import { openDatabase } from "../../src/store/sqlite/open";
import { tempDir } from "../harness";

const autocheckpoint = (sqlite: import("bun:sqlite").Database) => sqlite.query<{ wal_autocheckpoint: number }, []>("PRAGMA wal_autocheckpoint").get()!.wal_autocheckpoint;

async function until(condition: () => boolean, timeoutMs = 5000) {
  for (const deadline = Date.now() + timeoutMs; !condition(); await Bun.sleep(10)) {
    if (Date.now() > deadline) throw new Error("timed out");
  }
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A data dir's database, migrated, with the store's maintenance running on its connection. */
async function maintained() {
  const dataDir = tempDir("checkpoints");
  dirs.push(dataDir);
  const database = openDatabase(dataDir);
  migrate(database.sqlite, Date.now());
  const maintenance = await createStore(database.sqlite).startMaintenance(createLogger("text", "silent"));
  return { ...database, dataDir, maintenance };
}

test("the checkpoint thread copies the WAL into the database file; commits on the event loop do not", async () => {
  const { sqlite, dataDir, maintenance, close } = await maintained();
  const databaseFile = join(dataDir, "inboxd.db");
  try {
    await until(() => autocheckpoint(sqlite) === 0);
    sqlite.exec("CREATE TABLE filler (b BLOB)");
    const before = statSync(databaseFile).size;
    // 8 MiB: far past the 1000 pages at which a commit would checkpoint by itself.
    const insert = sqlite.query("INSERT INTO filler VALUES (?)");
    for (let i = 0; i < 64; i++) sqlite.transaction(() => insert.run(Buffer.alloc(128 * 1024, i)))();
    await until(() => statSync(databaseFile).size >= before + 8 * 1024 * 1024);
  } finally {
    await maintenance.stop();
    close();
  }
});

test("once the checkpoint thread stops, commits checkpoint the WAL themselves again", async () => {
  const { sqlite, maintenance, close } = await maintained();
  await until(() => autocheckpoint(sqlite) === 0);
  await maintenance.stop();
  expect(autocheckpoint(sqlite)).toBe(1000);
  close();
});

test("the checkpoint thread starts with a write and stops once nothing was written for its idle time", async () => {
  const dataDir = tempDir("checkpoints");
  dirs.push(dataDir);
  const { sqlite, close } = openDatabase(dataDir);
  migrate(sqlite, Date.now());
  const checkpoints = startCheckpoints(sqlite, dataDir, createLogger("text", "silent"), { idleThreadMs: 300 });
  const databaseFile = join(dataDir, "inboxd.db");
  try {
    // The start's own writes (the migrations) are copied first; then the thread ends.
    await until(() => checkpoints.threadRunning());
    await until(() => !checkpoints.threadRunning());
    sqlite.exec("CREATE TABLE filler (b BLOB)");
    // Pages a migration freed (a table copied and dropped) take new rows first: the file grows by the rest.
    const free = sqlite.query<{ n: number }, []>("SELECT freelist_count * page_size AS n FROM pragma_freelist_count, pragma_page_size").get()!.n;
    const before = statSync(databaseFile).size;
    sqlite.query("INSERT INTO filler VALUES (?)").run(Buffer.alloc(1024 * 1024));
    await until(() => checkpoints.threadRunning());
    await until(() => statSync(databaseFile).size >= before + 1024 * 1024 - free);
    await until(() => !checkpoints.threadRunning());
    expect(autocheckpoint(sqlite)).toBe(0);
  } finally {
    await checkpoints.stop();
    close();
  }
});

/** This process's anonymous resident memory, in MiB, once the JavaScript heap has collected. */
function anonymousMb(): number {
  Bun.gc(true);
  return Number(readFileSync("/proc/self/status", "utf8").match(/RssAnon:\s+(\d+)/)![1]) / 1024;
}

test("once nothing was written for the idle time, the connection gives back its page cache", async () => {
  const dataDir = tempDir("checkpoints");
  dirs.push(dataDir);
  const { sqlite, close } = openDatabase(dataDir, { cacheMb: 64 });
  migrate(sqlite, Date.now());
  const checkpoints = startCheckpoints(sqlite, dataDir, createLogger("text", "silent"), { idleThreadMs: 300 });
  try {
    sqlite.exec("CREATE TABLE filler (b BLOB)");
    const insert = sqlite.query("INSERT INTO filler VALUES (?)");
    for (let i = 0; i < 320; i++) sqlite.transaction(() => insert.run(Buffer.alloc(128 * 1024, i)))();
    await until(() => checkpoints.threadRunning());
    // 40 MiB of pages read through the cache, and held there.
    expect(sqlite.query<{ bytes: number }, []>("SELECT sum(length(b)) AS bytes FROM filler").get()!.bytes).toBe(320 * 128 * 1024);
    const filled = anonymousMb();
    await until(() => !checkpoints.threadRunning());
    expect(filled - anonymousMb()).toBeGreaterThan(20);
    // Read again, from the file: the cache fills as reads need it.
    expect(sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM filler").get()!.n).toBe(320);
  } finally {
    await checkpoints.stop();
    close();
  }
});
