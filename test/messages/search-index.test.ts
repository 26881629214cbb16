/**
 * The search index is written once per transaction (migration 0050): whatever a transaction does
 * with the messages it writes, the index agrees with the messages once it commits.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { parseMessage } from "../../src/mail/parse";
import { storeReceivedMessage } from "../../src/messages/receive";
import { ftsPhrase } from "../../src/messages/regex-literals";
import type { InboxRow } from "../../src/store/sqlite/inboxes";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { createInbox } from "./helpers";

let server: TestServer;
let inbox: InboxRow;
beforeAll(async () => {
  server = await startTestServer();
  const org = seedOrganization(server.app);
  inbox = server.app.store.inboxes.find(org.organizationId, (await createInbox(server, org.apiKey)).id)!;
});
afterAll(() => server.cleanup());

const mail = (subject: string) => Buffer.from(`From: sender@example.com\r\nTo: ${inbox.email}\r\nSubject: ${subject}\r\n\r\nBody of ${subject}.\r\n`);

async function receive(subject: string) {
  const raw = mail(subject);
  const parsed = await parseMessage(raw);
  return () => storeReceivedMessage(server.app, { inbox, parsed, raw });
}

const found = (phrase: string) => server.app.store.messageSearch.matchingPage(inbox.id, ftsPhrase(phrase), 1, 100).map((row) => row.subject);
const sql = (statement: string, ...values: string[]) => server.app.store.sqlite.query(statement).run(...values);

/** FTS5's own check of an external-content index against its content table, and nothing left waiting. */
function expectConsistentIndex() {
  sql("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)");
  expect(server.app.store.sqlite.query("SELECT count(*) AS n FROM messages_fts_pending").get()).toEqual({ n: 0 });
}

test("messages of one batched commit are all indexed when it settles", async () => {
  const writes = await Promise.all(["alpha batch", "beta batch", "gamma batch"].map(receive));
  await Promise.all(writes.map((write) => server.app.store.transactionBatched(write)));
  expect(found("batch").sort()).toEqual(["alpha batch", "beta batch", "gamma batch"]);
  expectConsistentIndex();
});

test("a message written and deleted or changed in the same transaction leaves the index consistent", async () => {
  const [gone, renamed] = [await receive("deleted before commit"), await receive("renamed before commit")];
  server.app.store.transaction(() => {
    sql("DELETE FROM messages WHERE id = ?", gone().id);
    sql("UPDATE messages SET subject = 'renamed within' WHERE id = ?", renamed().id);
  });
  expect(found("deleted before commit")).toEqual([]);
  // Indexed as it was at the commit: the new subject, and the body it kept.
  expect(found("renamed within")).toEqual(["renamed within"]);
  expect(found("renamed before commit")).toEqual(["renamed within"]);
  expectConsistentIndex();
});

test("changes and deletions of indexed messages reach the index", async () => {
  const first = server.app.store.transaction(await receive("indexed first"));
  const second = server.app.store.transaction(await receive("indexed second"));
  server.app.store.transaction(() => sql("UPDATE messages SET subject = 'indexed and renamed' WHERE id = ?", first.id));
  server.app.store.transaction(() => sql("DELETE FROM messages WHERE id = ?", second.id));
  expect(found("indexed")).toEqual(["indexed and renamed"]);
  expectConsistentIndex();
});

test("a write that fails in a batch takes its message out of the index with it", async () => {
  const kept = await receive("kept in batch");
  const failed = await receive("failed in batch");
  const results = await Promise.allSettled([
    server.app.store.transactionBatched(kept),
    server.app.store.transactionBatched(() => {
      failed();
      throw new Error("refused");
    }),
  ]);
  expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected"]);
  expect(found("in batch")).toEqual(["kept in batch"]);
  expectConsistentIndex();
});
