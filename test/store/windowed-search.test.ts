// The embedded engine's search index holds every organization's messages: a search of one inbox
// reads it in windows of rowids (src/store/sqlite/windowed-search.ts), with turns of the event loop
// between them, so that other organizations' matches cannot hold the server for as long as they
// take to read, and the pages come out as one statement over the whole index gave them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { storeReceivedMessage } from "../../src/messages/receive";
import { SEARCH_WINDOW_ROWIDS } from "../../src/store/sqlite/windowed-search";
import type { InboxRecord } from "../../src/store";
import { databaseOf, onPostgres, seedOrganization, sqliteOnly, type TestServer } from "../harness";
import { createInbox, startMessageServer } from "../messages/helpers";

/** Other organizations' matches: several windows' worth. */
const foreignMatches = 100_000;
const reason = "the windows are the embedded engine's (PostgreSQL searches on the database server)";

let server: TestServer;
let empty: { key: string; inbox: InboxRecord };
let crowded: { key: string; inbox: InboxRecord };

const inboxOf = async (name: string) => {
  const key = (await seedOrganization(server.app, name)).apiKey;
  return { key, inbox: (await server.app.store.inboxes.findByEmail((await createInbox(server, key)).email))! };
};

beforeAll(async () => {
  if (onPostgres) return;
  server = await startMessageServer();
  empty = await inboxOf("Quiet org");
  crowded = await inboxOf("Crowded org");
  const parsed = { references: [], to: [crowded.inbox.email], cc: [], attachments: [], from: "billing@example.com", subject: "invoice 0", text: "invoice" };
  const first = await server.app.store.transaction((tx) => storeReceivedMessage(server.app, tx, { inbox: crowded.inbox, parsed, raw: Buffer.from("") }));
  // The rest as copies of the first row, with short texts: what the index costs follows the text.
  databaseOf(server.app).run(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
     INSERT INTO messages (id, organization_id, inbox_id, thread_id, from_address, to_addresses, subject, text, status, created_at, updated_at)
     SELECT 'msg_copy_' || printf('%06d', i), organization_id, inbox_id, thread_id, from_address, to_addresses, 'invoice ' || i, 'invoice', status, created_at + i, created_at + i FROM messages, n WHERE id = ?2`,
    [foreignMatches - 1, first.id],
  );
}, 120_000);
afterAll(() => server?.cleanup());

const search = (org: { key: string; inbox: InboxRecord }, query: string, page = 1, per = 20) => server.api.get(`/v1/inboxes/${org.inbox.id}/messages?query=${encodeURIComponent(query)}&page=${page}&per=${per}`, org.key);

/** The longest the event loop went without turning while `work` ran (a setImmediate chain's largest gap). */
async function longestHold(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    await work();
  } finally {
    running = false;
  }
  return longest;
}

test.skipIf(onPostgres)(sqliteOnly("pages of a word and of a pattern come out newest first across the windows, as one statement gave them", reason), async () => {
  expect(foreignMatches).toBeGreaterThan(4 * SEARCH_WINDOW_ROWIDS);
  const subjectsOf = (page: { subject: string }[]) => page.map((message) => message.subject);
  const expected = (from: number, count: number) => Array.from({ length: count }, (_, i) => `invoice ${from - i}`);
  expect(subjectsOf((await search(crowded, "invoice", 1, 100)).body)).toEqual(expected(foreignMatches - 1, 100));
  // A page past the first window's rows.
  const deep = await search(crowded, "invoice", 250, 100);
  expect(subjectsOf(deep.body)).toEqual(expected(foreignMatches - 1 - 249 * 100, 100));
  expect(deep.headers.get("link")).toContain('rel="next"');
  // The last page: the oldest message, from the first window.
  expect(subjectsOf((await search(crowded, "invoice", foreignMatches / 100, 100)).body).at(-1)).toBe("invoice 0");
  expect(subjectsOf((await search(crowded, "/invoice 4\\d{4}$/")).body)).toEqual(expected(49_999, 20));
  expect((await search(empty, "invoice")).body).toEqual([]);
  expect((await search(empty, "/invoic[e]/")).body).toEqual([]);
}, 120_000);

test.skipIf(onPostgres)(sqliteOnly("a search of an empty inbox holds the event loop one window at a time, however many other organizations' messages match", reason), async () => {
  // Indexed first, so that the figures are the searches' own.
  await search(empty, "invoice");
  const holds: number[] = [];
  for (let i = 0; i < 5; i++) holds.push(await longestHold(() => search(empty, "invoice")));
  for (let i = 0; i < 5; i++) holds.push(await longestHold(() => search(empty, "/invoic[e]/")));
  console.log(`longest hold of the event loop per search (ms): ${holds.map((ms) => ms.toFixed(1)).join(" ")}`);
  // One statement over the 100,000 matches held it 40-60 ms; a window holds it a sixth of that.
  expect(holds.sort((a, b) => a - b)[5]!).toBeLessThan(25);
}, 60_000);
