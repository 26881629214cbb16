// bench/search: message search over one inbox of N messages (~2 kB of text each), through the
// service the list route calls (search, rows, presentation), beside SQLite's raw FTS5 query and a
// LIKE scan measured in the same process on the same database. The database grows from one size
// to the next. Run: bun bench/search/run.ts [sizes, default 100000,1000000]
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { insertInbox } from "../../src/inboxes/service";
import { listMessages } from "../../src/messages/service";
import { createStore } from "../../src/store/sqlite/index";
import { seedOrganization, tempDir, testEnv } from "../../test/harness";
import { corpus, seedMessages } from "./seed";

const sizes = (process.argv[2] ?? "100000,1000000").split(",").map(Number);
const rounds = 40;

interface Figures {
  median: number;
  p99: number;
  runs: number;
}

async function measure(queries: string[], run: (query: string) => unknown, repeat = rounds): Promise<Figures> {
  for (const query of queries) await run(query);
  const times: number[] = [];
  for (let r = 0; r < repeat; r++) {
    for (const query of queries) {
      const started = performance.now();
      const result = run(query);
      // The service answers in a promise; the raw references return at once.
      if (result instanceof Promise) await result;
      times.push(performance.now() - started);
    }
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, p99: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!, runs: times.length };
}

const ms = (n: number) => `${n.toFixed(n < 1 ? 3 : 1)} ms`;
const line = (label: string, f: Figures) => console.log(`  ${label.padEnd(58)} median ${ms(f.median).padStart(10)}   p99 ${ms(f.p99).padStart(10)}   (${f.runs} runs)`);

const dataDir = tempDir("inboxd-bench-search");
const app = await openApp(loadConfig(testEnv(dataDir)));
try {
  const { organizationId } = await seedOrganization(app);
  const inbox = (await app.store.inboxes.findByEmail((await app.store.transaction((tx) => insertInbox(app, tx, organizationId, { email: "bench@inboxd.test" }))).email))!;
  const content = corpus();
  // Words of 5+ letters from common to rare, and one that occurs nowhere.
  const byRank = (rank: number) => content.words.slice(rank).find((w) => w.length >= 5)!;
  const plainWords = [byRank(3), byRank(100), byRank(2_000), byRank(12_000), byRank(19_500), "nowhereword"];
  const literalRegexes = ["/invoice #\\d{6}/", "/invoice #(12|34)\\d{4}/", `/${byRank(19_500)}\\s+\\w+/i`];
  // The references, and the seeding, on a connection of their own to the same database.
  const sqlite = new Database(join(dataDir, "inboxd.db"), { strict: true });
  const seeding = { store: createStore(sqlite), clock: app.clock };
  const rawFts = sqlite.query<{ rowid: number }, [string]>("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 20");
  const like = sqlite.query<{ rowid: number }, [string, string]>("SELECT rowid FROM messages WHERE inbox_id = ? AND (subject LIKE ?2 OR text LIKE ?2 OR from_address LIKE ?2) ORDER BY created_at DESC LIMIT 20");
  const search = (query: string) => listMessages(app, organizationId, inbox.id, { page: 1, per: 20, query });

  let seeded = 0;
  for (const size of sizes) {
    const started = performance.now();
    // Seeding only: the rows, index and triggers are the real ones, the per-commit fsync is skipped.
    sqlite.exec("PRAGMA synchronous = OFF");
    await seedMessages(seeding, inbox, size - seeded, content, (done) => {
      if ((seeded + done) % 100_000 === 0) process.stderr.write(`  seeded ${seeded + done}\n`);
    });
    sqlite.exec("PRAGMA synchronous = FULL");
    const seedSeconds = (performance.now() - started) / 1000;
    console.log(`\n${size.toLocaleString("en")} messages in one inbox (seeded ${(size - seeded).toLocaleString("en")} in ${seedSeconds.toFixed(0)} s, ${Math.round((size - seeded) / seedSeconds)} messages/s)`);
    seeded = size;

    console.log(`  plain words: ${plainWords.join(", ")}`);
    line("plain search, inboxd (service, page of 20)", await measure(plainWords, search));
    line("  reference: raw FTS5 MATCH, ORDER BY rowid DESC LIMIT 20", await measure(plainWords, (w) => rawFts.all(`"${w}"`)));
    line("  reference: LIKE '%word%' over the inbox, same words", await measure(plainWords, (w) => like.all(inbox.id, `%${w}%`), 2));

    console.log(`  regexes with a literal: ${literalRegexes.join("  ")}`);
    line("regex search with a 3+ literal, inboxd", await measure(literalRegexes, search));
    line("  reference: raw FTS5 MATCH of the literal", await measure(['"invoice #"'], (q) => rawFts.all(q)));

    const noLiteral = "/\\d{3}-\\d{4}-\\d{5}/";
    let outcome = "";
    const budget = await measure([noLiteral], async (q) => {
      try {
        await search(q);
        outcome = "answered";
      } catch (e) {
        outcome = `422 (${(e as Error).message.slice(0, 60)}...)`;
      }
    }, 3);
    line(`regex without a literal ${noLiteral}: ${outcome.startsWith("422") ? "422 at budget" : outcome}`, budget);
  }
  sqlite.close();
} finally {
  app.close();
  rmSync(dataDir, { recursive: true, force: true });
}
