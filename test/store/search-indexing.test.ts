// The embedded engine's search index written after the messages (src/store/sqlite/search-index.ts,
// search-indexing.ts): a message stays noted for the index, across a restart too, until a search
// or the server's maintenance indexes it; a search finds every committed message all the same; and
// the maintenance keeps to its pace: a batch per interval, back to back only once far behind.
import { expect, test as bunTest } from "bun:test";
import { rmSync } from "node:fs";
import { openApp, type App } from "../../src/app";
import { Clock } from "../../src/clock";
import { loadConfig } from "../../src/config";
import { createInbox } from "../../src/inboxes/service";
import { createLogger } from "../../src/log";
import { parseMessage } from "../../src/mail/parse";
import { storeReceivedMessage } from "../../src/messages/receive";
import type { InboxRecord } from "../../src/store";
import { SEARCH_INDEX_BATCH, searchIndexStore } from "../../src/store/sqlite/search-index";
import { SEARCH_INDEX_BEHIND, SEARCH_INDEX_INTERVAL_MS, startSearchIndexing } from "../../src/store/sqlite/search-indexing";
import { closeDatabaseOf, databaseOf, eventually, onPostgres, seedOrganization, sqliteOnly, startTestServer, tempDir, testEnv } from "../harness";

/** SQLite's FTS5 index only: PostgreSQL's trigram indexes are on the messages table itself. */
const test = (title: string, work: () => Promise<void>) => bunTest.skipIf(onPostgres)(sqliteOnly(title, "SQLite's FTS5 index"), work);

const silent = createLogger("json", "silent");

/** The data dir's App with nothing running: no maintenance, so nothing indexes in the background. */
const openQuietApp = (dataDir: string) => openApp(loadConfig(testEnv(dataDir)), { clock: new Clock(), log: silent });

async function receive(app: App, inbox: InboxRecord, subject: string, body = `Body of ${subject}.`) {
  const raw = Buffer.from(`From: sender@example.com\r\nTo: ${inbox.email}\r\nSubject: ${subject}\r\n\r\n${body}\r\n`);
  const parsed = await parseMessage(raw);
  await app.store.transaction((tx) => storeReceivedMessage(app, tx, { inbox, parsed, raw }));
}

const noted = (app: App) => databaseOf(app).query<{ n: number }, []>("SELECT count(*) AS n FROM messages_fts_pending").get()!.n;
/** What the index itself finds, without a search's catch-up. */
const indexed = (app: App, phrase: string) => databaseOf(app).query<{ n: number }, [string]>("SELECT count(*) AS n FROM messages_fts WHERE messages_fts MATCH ?").get(`"${phrase}"`)!.n;

async function withInbox(app: App): Promise<InboxRecord> {
  const { organizationId } = await seedOrganization(app);
  const { id } = await createInbox(app, organizationId, { email: "search@inboxd.test" });
  return (await app.store.inboxes.find(organizationId, id))!;
}

/** `work` on a new data dir's quiet App, removed after. */
async function withQuietApp(work: (app: App) => Promise<void>) {
  const dataDir = tempDir("search-indexing");
  const app = await openQuietApp(dataDir);
  try {
    await work(app);
  } finally {
    closeDatabaseOf(app);
    app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

test("a stored message waits for the index, and a search indexes what waits before it reads", () =>
  withQuietApp(async (app) => {
    const inbox = await withInbox(app);
    for (const subject of ["first waiting", "second waiting", "third waiting"]) await receive(app, inbox, subject);
    expect(noted(app)).toBe(3);
    expect(await app.store.messageSearch.unindexed()).toBe(3);
    expect(indexed(app, "waiting")).toBe(0);

    const found = await app.store.messageSearch.containing(inbox.id, "waiting", 1, 10);
    expect(found.map((row) => row.subject).sort()).toEqual(["first waiting", "second waiting", "third waiting"]);
    expect(await app.store.messageSearch.unindexed()).toBe(0);
    expect(indexed(app, "waiting")).toBe(3);
  }));

test("a batch stops at its bound of bytes, so that long texts are indexed fewer at a time", () =>
  withQuietApp(async (app) => {
    const inbox = await withInbox(app);
    // 50,000 bytes of text each: two fit the batch's 128 KiB, a third does not.
    for (let n = 0; n < 5; n++) await receive(app, inbox, `long ${n}`, "lorem ipsum ".repeat(50_000 / 12));
    const sqlite = databaseOf(app);
    const index = searchIndexStore(sqlite);
    const batch = () => sqlite.transaction(() => index.indexBatch())();
    expect([batch(), batch(), batch(), batch()]).toEqual([2, 2, 1, 0]);
    expect(indexed(app, "lorem")).toBe(5);
  }));

test("what waits for the index when the process stops is indexed in the background after its next start, with no search", async () => {
  const dataDir = tempDir("search-indexing");
  const app = await openQuietApp(dataDir);
  const inbox = await withInbox(app);
  for (const subject of ["left noted", "also left noted"]) await receive(app, inbox, subject);
  expect(noted(app)).toBe(2);
  closeDatabaseOf(app);
  app.close();

  const server = await startTestServer({ dataDir });
  try {
    await eventually("the noted messages indexed", () => noted(server.app), (n) => n === 0);
    expect(indexed(server.app, "left noted")).toBe(2);
    // The message received while the server runs follows the same way.
    await receive(server.app, inbox, "noted while running");
    await eventually("the new message indexed", () => indexed(server.app, "noted while running"), (n) => n === 1);
    databaseOf(server.app).query("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)").run();
  } finally {
    await server.cleanup();
  }
});

test("the background indexes a batch per interval, and back to back while more than its bound wait", async () => {
  // Behind by two batches and a little: three batches back to back bring it within the bound.
  let waiting = SEARCH_INDEX_BEHIND + 2 * SEARCH_INDEX_BATCH + 10;
  const batchesAt: number[] = [];
  const indexing = startSearchIndexing(
    {
      pendingAtMost: async () => waiting,
      async indexBatch() {
        batchesAt.push(performance.now());
        const taken = Math.min(SEARCH_INDEX_BATCH, waiting);
        waiting -= taken;
        return taken;
      },
    },
    silent,
  );
  try {
    await eventually("two intervals' batches", () => batchesAt.length, (n) => n >= 4);
  } finally {
    await indexing.stop();
  }
  const gaps = batchesAt.slice(1).map((at, i) => at - batchesAt[i]!);
  // Batches 1-3 in one catch-up, a turn of the event loop apart; the 4th an interval later.
  expect(gaps[0]!).toBeLessThan(SEARCH_INDEX_INTERVAL_MS * 0.4);
  expect(gaps[1]!).toBeLessThan(SEARCH_INDEX_INTERVAL_MS * 0.4);
  expect(gaps[2]!).toBeGreaterThan(SEARCH_INDEX_INTERVAL_MS * 0.8);
  expect(waiting).toBe(SEARCH_INDEX_BEHIND - 2 * SEARCH_INDEX_BATCH + 10);
});

test("an index that fails at every try (a full disk) is logged once, not four times a second, and once more when it works again", async () => {
  const lines: { level: string; event: string; failedTries?: number }[] = [];
  const log = createLogger("json", "debug", (line) => lines.push(JSON.parse(line)));
  let tries = 0;
  let failures = 0;
  let failing = true;
  const indexing = startSearchIndexing(
    {
      pendingAtMost: async () => 1,
      async indexBatch() {
        tries++;
        if (!failing) return 0;
        failures++;
        throw new Error("database or disk is full");
      },
    },
    log,
  );
  try {
    await eventually("four failed tries", () => tries, (n) => n >= 4);
    failing = false;
    const failedTries = tries;
    await eventually("a try that worked", () => tries, (n) => n > failedTries);
  } finally {
    await indexing.stop();
  }
  expect(lines.map(({ level, event, failedTries }) => ({ level, event, failedTries }))).toEqual([
    { level: "error", event: "search indexing failed; tried again shortly", failedTries: undefined },
    { level: "info", event: "search indexing failed; tried again shortly: works again", failedTries: failures },
  ]);
});
