import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { walSync } from "../../src/store/sqlite/group-commit";
import { createStore, type StoreOptions } from "../../src/store/sqlite/index";
import type { Store } from "../../src/store/store";
import { migrate } from "../../src/store/sqlite/migrate";
import { openDatabase } from "../../src/store/sqlite/open";
import { eventually, tempDir } from "../harness";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The store's schema and a table to write to, on `sqlite` (`seed` writes to it first); the store's batched transactions on it. */
function storeOn(sqlite: Database, options: StoreOptions = {}, seed = (_sqlite: Database) => {}) {
  migrate(sqlite, Date.now());
  sqlite.exec("CREATE TABLE t (v TEXT)");
  seed(sqlite);
  return createStore(sqlite, options);
}

/** inboxd's own database (WAL, synchronous = FULL), and the store on it. */
function walDatabase(options: StoreOptions = {}, seed?: (sqlite: Database) => void) {
  const dir = tempDir("group-commit");
  dirs.push(dir);
  const database = openDatabase(dir);
  return { ...database, dir, store: storeOn(database.sqlite, options, seed) };
}

/** The ids of org_1's events that readers are shown, oldest first. */
const shownEventIds = async (store: Store) => (await store.events.readAfter("org_1", { afterId: null, limit: 100, maxChars: 1 << 20 })).events.map((event) => event.id);

const values = (sqlite: Database) => sqlite.query<{ v: string }, []>("SELECT v FROM t ORDER BY v").all().map((row) => row.v);

/** A sync the test finishes by hand, counting how often it was asked for. */
function manualSync() {
  const pending: { resolve: () => void; reject: (error: Error) => void }[] = [];
  return {
    calls: () => pending.length,
    sync: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
    finish: (index: number, error?: Error) => (error ? pending[index]!.reject(error) : pending[index]!.resolve()),
  };
}

const settledSoon = async (promise: Promise<unknown>) => Promise.race([promise.then(() => true, () => true), Bun.sleep(20).then(() => false)]);

test("writes of one event-loop turn share a transaction; one that throws is rolled back alone", async () => {
  const sqlite = new Database(":memory:");
  const batched = storeOn(sqlite).transactionBatched;
  const insert = (v: string) => sqlite.query("INSERT INTO t VALUES (?)").run(v);
  let sawOpenTransaction = true;
  const results = await Promise.allSettled([
    batched(async () => {
      insert("a");
      return "first";
    }),
    batched(async () => {
      insert("b");
      throw new Error("refused");
    }),
    batched(async () => {
      sawOpenTransaction &&= sqlite.inTransaction;
      insert("c");
      return "third";
    }),
  ]);
  expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["first", "refused", "third"]);
  expect(values(sqlite)).toEqual(["a", "c"]);
  expect(sawOpenTransaction).toBe(true);
  expect(sqlite.inTransaction).toBe(false);
  // A later turn starts a new batch.
  expect(await batched(async () => (insert("d"), "later"))).toBe("later");
});

test("a write settles only once the WAL is synced after its commit; writes queued meanwhile wait for the next sync", async () => {
  const sync = manualSync();
  const { sqlite, close, dir, store } = walDatabase({ syncCommits: sync.sync });
  const batched = store.transactionBatched;
  const insert = (v: string) => async () => void sqlite.query("INSERT INTO t VALUES (?)").run(v);

  const first = batched(insert("a"));
  await Bun.sleep(5);
  // Committed (a second connection sees it) but not reported: the sync has not finished.
  const reader = new Database(join(dir, "inboxd.db"), { readonly: true });
  expect(values(reader)).toEqual(["a"]);
  expect(sync.calls()).toBe(1);
  expect(await settledSoon(first)).toBe(false);
  // The connection is back to synchronous = FULL (2) for every other commit.
  expect(sqlite.query<{ synchronous: number }, []>("PRAGMA synchronous").get()!.synchronous).toBe(2);

  // Queued while the first sync runs: neither committed nor synced until it ends.
  const second = batched(insert("b"));
  const third = batched(insert("c"));
  await Bun.sleep(5);
  expect(values(reader)).toEqual(["a"]);
  sync.finish(0);
  await first;
  await Bun.sleep(5);
  expect(values(reader)).toEqual(["a", "b", "c"]);
  expect(sync.calls()).toBe(2);
  expect(await settledSoon(second)).toBe(false);

  // A failed sync fails every write of its batch: none may be reported as on disk.
  sync.finish(1, new Error("EIO"));
  expect(await Promise.allSettled([second, third])).toEqual([
    { status: "rejected", reason: new Error("EIO") },
    { status: "rejected", reason: new Error("EIO") },
  ]);
  reader.close();
  close();
});

test("a batch that changed no row settles without a sync", async () => {
  const sync = manualSync();
  const { sqlite, close, store } = walDatabase({ syncCommits: sync.sync });
  expect(await store.transactionBatched(async () => values(sqlite))).toEqual([]);
  expect(sync.calls()).toBe(0);
  close();
});

test("by default the WAL file itself is synced (fdatasync)", async () => {
  const { sqlite, close, store } = walDatabase();
  const results = await Promise.all(["a", "b"].map((v) => store.transactionBatched(async () => sqlite.query("INSERT INTO t VALUES (?)").run(v).changes)));
  expect(results).toEqual([1, 1]);
  expect(values(sqlite)).toEqual(["a", "b"]);
  close();
});

test("events of a commit that did not wait for the disk are read, and their readers woken, once a sync has covered them", async () => {
  const sync = manualSync();
  let wakes = 0;
  const { close, store } = walDatabase({ syncCommits: sync.sync, onEventsCommitted: () => wakes++ });
  const emit = (waitForDisk: boolean) => store.transaction((tx) => tx.events.emit({ organizationId: "org_1", type: "inbox.updated", payload: {} }, Date.now()), { waitForDisk });
  const seen = () => shownEventIds(store);
  try {
    const onDisk = await emit(true);
    expect(wakes).toBe(1);
    expect(await seen()).toEqual([onDisk]);

    const first = await emit(false);
    expect(sync.calls()).toBe(1);
    expect(wakes).toBe(1);
    expect(await seen()).toEqual([onDisk]);
    expect(await store.events.newestId("org_1")).toBe(onDisk);
    // Committed while the first sync runs: the next sync covers it, not this one.
    const second = await emit(false);
    expect(sync.calls()).toBe(1);
    sync.finish(0);
    await eventually("the wake after the first sync", () => wakes, (count) => count === 2);
    expect(await seen()).toEqual([onDisk, first]);
    expect(sync.calls()).toBe(2);
    sync.finish(1);
    await eventually("the wake after the second sync", () => wakes, (count) => count === 3);
    expect(await seen()).toEqual([onDisk, first, second]);
    expect(await store.events.newestId("org_1")).toBe(second);

    // A commit that syncs the WAL itself covers those before it.
    const third = await emit(false);
    const fourth = await emit(true);
    expect(await seen()).toEqual([onDisk, first, second, third, fourth]);
    sync.finish(2);
  } finally {
    close();
  }
});

test("a webhook test event kept from before the start does not count as an event readers have seen", async () => {
  const sync = manualSync();
  const seed = (sqlite: Database) => sqlite.query("INSERT INTO events (id, organization_id, type, payload, created_at) VALUES ('evt_test_0123456789ab', 'org_1', 'message.received', '{}', 0)").run();
  const { close, store } = walDatabase({ syncCommits: sync.sync }, seed);
  try {
    await store.transaction((tx) => tx.events.emit({ organizationId: "org_1", type: "inbox.updated", payload: {} }, Date.now()), { waitForDisk: false });
    expect(await shownEventIds(store)).toEqual([]);
    sync.finish(0);
    await eventually("the event once on disk", () => shownEventIds(store), (ids) => ids.length === 1);
  } finally {
    close();
  }
});

test("a batch's events are shown after the batch's own sync, the one sync it makes; a failed sync shows nothing until a later one succeeds", async () => {
  const sync = manualSync();
  let wakes = 0;
  const { close, store } = walDatabase({ syncCommits: sync.sync, onEventsCommitted: () => wakes++ });
  const seen = () => shownEventIds(store);
  try {
    let batched = "";
    const written = store.transactionBatched(async (tx) => {
      batched = await tx.events.emit({ organizationId: "org_1", type: "inbox.updated", payload: {} }, Date.now());
    });
    await eventually("the batch's sync", () => sync.calls(), (calls) => calls === 1);
    expect(await seen()).toEqual([]);
    sync.finish(0);
    await written;
    expect(sync.calls()).toBe(1);
    expect(wakes).toBe(1);
    expect(await seen()).toEqual([batched]);

    const lost = await store.transaction((tx) => tx.events.emit({ organizationId: "org_1", type: "inbox.updated", payload: {} }, Date.now()), { waitForDisk: false });
    sync.finish(1, new Error("I/O error"));
    await Bun.sleep(20);
    expect(await seen()).toEqual([batched]);
    expect(wakes).toBe(1);
    const later = await store.transaction((tx) => tx.events.emit({ organizationId: "org_1", type: "inbox.updated", payload: {} }, Date.now()), { waitForDisk: false });
    await eventually("the next sync", () => sync.calls(), (calls) => calls === 3);
    sync.finish(2);
    await eventually("both shown", seen, (ids) => ids.length === 3);
    expect(await seen()).toEqual([batched, lost, later]);
  } finally {
    close();
  }
});

test("the WAL deleted under the server, then made anew at its path by another opener: the sync fails, the commits being in the deleted file", async () => {
  const { sqlite, close, dir } = walDatabase();
  const wal = walSync(sqlite)!;
  sqlite.exec("INSERT INTO t VALUES ('a')");
  await wal.sync();
  rmSync(join(dir, "inboxd.db-wal"));
  sqlite.exec("INSERT INTO t VALUES ('b')");
  await expect(wal.sync()).rejects.toThrow("was deleted or replaced");
  // Another connection (a shell, a backup) opens the database: a WAL is at the path again.
  const other = new Database(join(dir, "inboxd.db"));
  try {
    other.query("SELECT count(*) FROM t").get();
  } catch {
    // It may find the database in a state it cannot read: its open is what matters.
  }
  other.close();
  expect(existsSync(join(dir, "inboxd.db-wal"))).toBe(true);
  sqlite.exec("INSERT INTO t VALUES ('c')");
  await expect(wal.sync()).rejects.toThrow("was deleted or replaced");
  wal.close();
  close();
});
