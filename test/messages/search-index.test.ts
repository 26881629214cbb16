/**
 * The search index follows the messages (migration 0050, src/store/sqlite/search-index.ts): whatever
 * a transaction does with the messages it writes, a search after its commit agrees with them, and
 * so does the index once it has caught up. Its catch-up in the background: test/store/search-indexing.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test as bunTest } from "bun:test";
import { parseMessage } from "../../src/mail/parse";
import { storeReceivedMessage } from "../../src/messages/receive";
import type { InboxRecord, Store, Transaction } from "../../src/store";
import { createStore } from "../../src/store/sqlite/index";
import { migrate } from "../../src/store/sqlite/migrate";
import { SEARCHED_TEXT_CHARS } from "../../src/store/searched-text";
import { databaseOf, onPostgres, seedOrganization, sqliteOnly, startTestServer, type TestServer } from "../harness";
import { sqliteBeforeMigration } from "../store/sqlite-before-migration";
import { createInbox } from "./helpers";

/** SQLite's FTS5 index and its catch-up only: PostgreSQL's trigram indexes are on messages itself. */
const test = (title: string, work: () => Promise<void>) => bunTest.skipIf(onPostgres)(sqliteOnly(title, "SQLite's FTS5 index"), work);

let server: TestServer;
let inbox: InboxRecord;
/**
 * The store on the test's own connection to the server's database, so that the statements below
 * (`sql`) run inside its transactions.
 */
let store: Store;
beforeAll(async () => {
  if (onPostgres) return;
  server = await startTestServer();
  const org = await seedOrganization(server.app);
  inbox = (await server.app.store.inboxes.find(org.organizationId, (await createInbox(server, org.apiKey)).id))!;
  store = createStore(databaseOf(server.app));
});
afterAll(() => (onPostgres ? undefined : server.cleanup()));

const mail = (subject: string) => Buffer.from(`From: sender@example.com\r\nTo: ${inbox.email}\r\nSubject: ${subject}\r\n\r\nBody of ${subject}.\r\n`);

async function receive(subject: string) {
  const raw = mail(subject);
  const parsed = await parseMessage(raw);
  return (tx: Transaction) => storeReceivedMessage(server.app, tx, { inbox, parsed, raw });
}

const found = async (phrase: string) => (await store.messageSearch.containing(inbox.id, phrase, 1, 100)).map((row) => row.subject);
const sql = (statement: string, ...values: string[]) => databaseOf(server.app).query(statement).run(...values);

/** FTS5's own check of an external-content index against its content table, and nothing left waiting (a search just caught it up). */
function expectConsistentIndex() {
  sql("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)");
  expect(databaseOf(server.app).query("SELECT count(*) AS n FROM messages_fts_pending").get()).toEqual({ n: 0 });
}

test("a search finds every message of a batched commit once it settles", async () => {
  const writes = await Promise.all(["alpha batch", "beta batch", "gamma batch"].map(receive));
  await Promise.all(writes.map((write) => store.transactionBatched(write)));
  expect((await found("batch")).sort()).toEqual(["alpha batch", "beta batch", "gamma batch"]);
  expectConsistentIndex();
});

test("a message written and deleted or changed in the same transaction leaves the index consistent", async () => {
  const [gone, renamed] = [await receive("deleted before commit"), await receive("renamed before commit")];
  await store.transaction(async (tx) => {
    sql("DELETE FROM messages WHERE id = ?", (await gone(tx)).id);
    sql("UPDATE messages SET subject = 'renamed within' WHERE id = ?", (await renamed(tx)).id);
  });
  expect(await found("deleted before commit")).toEqual([]);
  // Indexed as it was at the commit: the new subject, and the body it kept.
  expect(await found("renamed within")).toEqual(["renamed within"]);
  expect(await found("renamed before commit")).toEqual(["renamed within"]);
  expectConsistentIndex();
});

test("changes and deletions of indexed messages reach the index", async () => {
  const first = await store.transaction(await receive("indexed first"));
  const second = await store.transaction(await receive("indexed second"));
  await store.transaction(async () => sql("UPDATE messages SET subject = 'indexed and renamed' WHERE id = ?", first.id));
  await store.transaction(async () => sql("DELETE FROM messages WHERE id = ?", second.id));
  expect(await found("indexed")).toEqual(["indexed and renamed"]);
  expectConsistentIndex();
});

test("a write that fails in a batch takes its message out of the index with it", async () => {
  const kept = await receive("kept in batch");
  const failed = await receive("failed in batch");
  const results = await Promise.allSettled([
    store.transactionBatched(kept),
    store.transactionBatched(async (tx) => {
      await failed(tx);
      throw new Error("refused");
    }),
  ]);
  expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected"]);
  expect(await found("in batch")).toEqual(["kept in batch"]);
  expectConsistentIndex();
});

describe("a long text", () => {
  const head = "opening words";
  const tail = "closing words";
  const longText = `${head} ${"filler ".repeat(Math.ceil(SEARCHED_TEXT_CHARS / 7))}${tail}`;

  test(`is indexed as far as its first ${SEARCHED_TEXT_CHARS} characters: a phrase there is found, one past them is not; its change and deletion leave the index consistent`, async () => {
    const raw = Buffer.from(`From: sender@example.com\r\nTo: ${inbox.email}\r\nSubject: long text\r\n\r\n${longText}\r\n`);
    const message = await store.transaction((tx) => parseMessage(raw).then((parsed) => storeReceivedMessage(server.app, tx, { inbox, parsed, raw })));
    expect(await found(head)).toEqual(["long text"]);
    expect(await found(tail)).toEqual([]);
    await store.transaction(async () => sql("UPDATE messages SET text = ? WHERE id = ?", `${tail} ${longText}`, message.id));
    expect(await found(tail)).toEqual(["long text"]);
    // FTS5 checks the index against the whole text, which it holds only in part: checked once the
    // message is gone, which takes out (with the capped text) what its change put in.
    await store.transaction(async () => sql("DELETE FROM messages WHERE id = ?", message.id));
    expect(await found(head)).toEqual([]);
    expectConsistentIndex();
  });

  test("indexed whole before migration 0250, is indexed again as far as the cap, and its deletion leaves the index consistent", async () => {
    const db = sqliteBeforeMigration("0250_search_text_cap");
    const insert = db.query("INSERT INTO messages (id, organization_id, inbox_id, thread_id, from_address, to_addresses, subject, text, status, created_at, updated_at) VALUES (?, 'org_1', 'inb_1', 'thr_1', 'x@example.com', '[]', ?, ?, 'received', 5, 5)");
    insert.run("msg_long", "long", longText);
    insert.run("msg_short", "short", `${head} ${tail}`);
    // What the index held before: each text whole.
    db.exec("INSERT INTO messages_fts (rowid, subject, text, from_address) SELECT rowid, subject, text, from_address FROM messages; DELETE FROM messages_fts_pending");
    const matching = (phrase: string) => db.query<{ id: string }, [string]>("SELECT messages.id FROM messages_fts JOIN messages ON messages.rowid = messages_fts.rowid WHERE messages_fts MATCH ? ORDER BY messages.id").all(`"${phrase}"`).map((row) => row.id);
    expect(matching(tail)).toEqual(["msg_long", "msg_short"]);
    migrate(db, 0);
    expect(matching(head)).toEqual(["msg_long", "msg_short"]);
    expect(matching(tail)).toEqual(["msg_short"]);
    db.exec("DELETE FROM messages WHERE id = 'msg_long'");
    db.exec("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)");
    expect(matching(head)).toEqual(["msg_short"]);
    db.close();
  });
});
