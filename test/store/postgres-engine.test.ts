// The PostgreSQL engine's own guarantees, on a real server: migrations applied once by nodes that
// start together, nested transactions as savepoints, statements rendered once on any connection, event ids in commit order whatever the
// writers and their clocks, a drizzle schema that agrees with the migrations, large values staged and claimed, case-insensitive addresses and
// substring search, counters shared by two nodes, and a node with another secret key refused.
import { SQL } from "bun";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { is } from "drizzle-orm";
import { getTableConfig, PgTable } from "drizzle-orm/pg-core";
import { Clock } from "../../src/clock";
import { ConfigError, loadConfig } from "../../src/config";
import { newId } from "../../src/ids";
import { createLogger } from "../../src/log";
import type { MessageRecord } from "../../src/store";
import { connect, connectServing, SERVER_DEADLINE_SECONDS } from "../../src/store/postgres/connection";
import { createPostgresStore, openPostgresStore } from "../../src/store/postgres/index";
import { leasesOf } from "../../src/store/postgres/leases";
import { migrate } from "../../src/store/postgres/migrate";
import { migrations } from "../../src/store/postgres/migrations";
import * as schema from "../../src/store/postgres/schema/index";
import { openSecrets } from "../../src/store/postgres/secrets";
import { SECRET_KEY_BYTES, secretBox } from "../../src/store/secret-box";
import type { Store } from "../../src/store/store";
import { postgresMissing, testPostgres } from "../peers/postgres";

describe.skipIf(postgresMissing !== undefined && !process.env.INBOXD_TEST_DATABASE_URL)("the PostgreSQL engine", () => {
  let postgres: Awaited<ReturnType<typeof testPostgres>>;
  let url: string;
  const clients: ReturnType<typeof connect>[] = [];
  const clock = new Clock();
  const secrets = secretBox(randomBytes(SECRET_KEY_BYTES));
  let store: Store;
  let organizationId: string;
  let inboxId: string;

  const client = () => {
    const opened = connect(url);
    clients.push(opened);
    return opened;
  };
  const node = () => createPostgresStore(client(), { leases: leasesOf(clock), secrets });
  const raw = async <T>(statement: string, ...params: unknown[]) => (await clients[0]!.unsafe(statement, params)) as T[];

  beforeAll(async () => {
    postgres = await testPostgres();
    url = await postgres.createDatabase("inboxd_engine");
    // Three nodes starting at once: one applies the migrations, the others wait for it and find none left.
    const applied = await Promise.all([migrate(client(), clock.now()), migrate(client(), clock.now()), migrate(client(), clock.now())]);
    expect(applied.map((versions) => versions.length).sort()).toEqual([0, 0, migrations.length]);
    store = node();
    organizationId = newId("org");
    inboxId = newId("inb");
    const now = clock.now();
    await store.accounts.createOrganization({ id: organizationId, name: "Engine" }, now);
    await store.inboxes.insert({ id: inboxId, organizationId, name: null, email: "Mixed.Case@Engine.Test", createdAt: now, updatedAt: now });
    // initdb and the start of a cluster of this file's own, when there is no shared one.
  }, 60_000);

  afterAll(async () => {
    for (const opened of clients) await opened.close();
    postgres?.close();
  });

  /** A received message in a thread of its own, with `raw` as its source. */
  async function storeMessage(fields: Partial<MessageRecord>, raw = { bytes: Buffer.from("raw") as Uint8Array, blobId: null as string | null }) {
    const now = clock.now();
    const id = newId("msg");
    await store.transaction(async (tx) => {
      const thread = await tx.threads.insert({ id: newId("thr"), organizationId, inboxId, subject: fields.subject ?? "", createdAt: now });
      const message: MessageRecord = {
        id, organizationId, inboxId, threadId: thread.id, fromInboxId: null, toInboxId: null, from: "sender@example.com", fromName: null,
        to: ["mixed.case@engine.test"], cc: [], bcc: [], replyTo: [], subject: "", text: null, html: null, labels: [], read: false, status: "received",
        messageIdHeader: null, receivedDigest: null, inReplyTo: null, references: [], authentication: null, externalMessageId: null, createdAt: now, updatedAt: now, ...fields,
      };
      await tx.messages.insert(message, raw, []);
    });
    return id;
  }

  test("the drizzle schema names exactly the tables and columns the migrations create", async () => {
    const tables = Object.values(schema).filter((value) => is(value, PgTable)).map((table) => getTableConfig(table as PgTable));
    const created = await raw<{ table: string; column: string }>(
      "SELECT table_name AS table, column_name AS column FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'schema_migrations'",
    );
    const columnsOf = (table: string) => created.filter((row) => row.table === table).map((row) => row.column).sort();
    expect(tables.map((table) => table.name).sort()).toEqual([...new Set(created.map((row) => row.table))].sort());
    for (const table of tables) expect({ table: table.name, columns: table.columns.map((column) => column.name).sort() }).toEqual({ table: table.name, columns: columnsOf(table.name) });
  });

  test("the server bounds each statement and each transaction left idle (a node frozen inside one holds its row locks no longer), unless the operator set a bound of their own; a migration is not bounded", async () => {
    const bound = `${SERVER_DEADLINE_SECONDS}s`;
    const settings = async (databaseUrl: string) => {
      const serving = await connectServing(databaseUrl);
      try {
        return await serving.unsafe("SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle");
      } finally {
        await serving.close();
      }
    };
    expect(await settings(url)).toEqual([{ statement: bound, idle: bound }]);
    const operatorsUrl = await postgres.createDatabase("inboxd_operator_bounds");
    await raw(`ALTER DATABASE "${new URL(operatorsUrl).pathname.slice(1)}" SET statement_timeout = '5s'`);
    expect(await settings(operatorsUrl)).toEqual([{ statement: "5s", idle: bound }]);
    // A pool whose statements may take a millisecond at most still creates the whole schema.
    const hurried = new SQL(await postgres.createDatabase("inboxd_hurried_migration"), { max: 1, connection: { statement_timeout: "1ms" } });
    try {
      expect(await migrate(hurried, clock.now())).toHaveLength(migrations.length);
    } finally {
      await hurried.close();
    }
  });

  test("a nested transaction is a savepoint: its failure, caught, undoes its own writes only; an outer failure undoes all", async () => {
    const now = clock.now();
    const kept = newId("org");
    const undone = newId("org");
    await store.transaction(async (tx) => {
      await tx.accounts.createOrganization({ id: kept, name: "kept" }, now);
      await expect(
        tx.transaction(async (inner) => {
          await inner.accounts.createOrganization({ id: undone, name: "undone" }, now);
          throw new Error("inner failure");
        }),
      ).rejects.toThrow("inner failure");
    });
    expect(await store.accounts.findOrganization(kept)).toBeDefined();
    expect(await store.accounts.findOrganization(undone)).toBeUndefined();

    const never = newId("org");
    await expect(
      store.transaction(async (tx) => {
        await tx.accounts.createOrganization({ id: never, name: "never" }, now);
        throw new Error("outer failure");
      }, { waitForDisk: false }),
    ).rejects.toThrow("outer failure");
    expect(await store.accounts.findOrganization(never)).toBeUndefined();
  });

  test("a statement rendered once runs on the connection it is given: in a transaction it is undone with it, outside on the pool", async () => {
    const now = clock.now();
    // threads.insert runs on the pool first, then in a transaction that fails.
    const committed = newId("thr");
    await store.threads.insert({ id: committed, organizationId, inboxId, subject: "on the pool", createdAt: now });
    const undone = newId("thr");
    await expect(
      store.transaction(async (tx) => {
        await tx.threads.insert({ id: undone, organizationId, inboxId, subject: "in the transaction", createdAt: now });
        expect(await tx.threads.find(organizationId, inboxId, undone)).toBeDefined();
        throw new Error("undo");
      }),
    ).rejects.toThrow("undo");
    expect(await store.threads.find(organizationId, inboxId, committed)).toBeDefined();
    expect(await store.threads.find(organizationId, inboxId, undone)).toBeUndefined();
    // inboxes.findByEmail in a transaction first: it sees the transaction's own inbox; the pool, after, does not.
    const email = `${newId("rendered")}@engine.test`;
    await expect(
      store.transaction(async (tx) => {
        await tx.inboxes.insert({ id: newId("inb"), organizationId, name: null, email, createdAt: now, updatedAt: now });
        expect(await tx.inboxes.findByEmail(email)).toMatchObject({ email });
        throw new Error("undo");
      }),
    ).rejects.toThrow("undo");
    expect(await store.inboxes.findByEmail(email)).toBeUndefined();
  });

  test("events commit in id order: a second writer waits for the first's commit, and takes an id above the newest whatever its clock", async () => {
    const other = node();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = store.transaction(async (tx) => {
      const id = await tx.events.emit({ organizationId, type: "inbox.updated", payload: { n: 1 } }, clock.now());
      await held;
      return id;
    });
    await Bun.sleep(100);
    let secondDone = false;
    const second = other.events.emit({ organizationId, type: "inbox.updated", payload: { n: 2 } }, clock.now()).finally(() => (secondDone = true));
    await Bun.sleep(200);
    // The second emit waits for the first transaction: a reader never sees its (larger) id before the first commits.
    expect(secondDone).toBe(false);
    expect((await store.events.readAfter(organizationId, { afterId: null, limit: 10, maxChars: 1 << 20 })).events).toEqual([]);
    release();
    const ids = [await first, await second];
    expect(ids[1]! > ids[0]!).toBe(true);

    // An event another node wrote with a clock ahead of ours: the next id still sorts after it.
    const ahead = "evt_ffffffffffff000000000000";
    await raw("INSERT INTO events (id, organization_id, type, payload, created_at) VALUES ($1, $2, 'inbox.updated', '{}', $3)", ahead, organizationId, clock.now());
    const after = await store.events.emit({ organizationId, type: "inbox.updated", payload: { n: 3 } }, clock.now());
    expect(after > ahead).toBe(true);
    const page = await store.events.readAfter(organizationId, { afterId: null, limit: 10, maxChars: 1 << 20 });
    expect(page.events.map((event) => event.id)).toEqual([...ids, ahead, after]);
    expect(page.nextAfterId).toBe(after);
  });

  test("a claim of due webhook deliveries passes over a webhook being deleted without locking its deliveries, which the delete's cascade takes next", async () => {
    const now = clock.now();
    const webhookId = newId("whk");
    await store.webhooks.insert({ id: webhookId, organizationId, url: "https://hooks.example/a", events: ["message.received"], secret: "s", enabled: true, disabledReason: null, firstFailureAt: null, createdAt: now, updatedAt: now });
    await store.webhooks.queueTestEvent(webhookId, { id: `evt_test_${newId("x").slice(2)}`, organizationId, type: "message.received", inboxId: null, messageId: null, payload: "{}", createdAt: now });
    const [{ id: deliveryId }] = await raw<{ id: string }>("SELECT id::text AS id FROM webhook_deliveries WHERE webhook_id = $1", webhookId);
    // A delete's first lock, the webhook's row, held by another connection.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const deleting = client().begin(async (sql) => {
      await sql`SELECT 1 FROM webhooks WHERE id = ${webhookId} FOR UPDATE`;
      locked();
      await held;
    });
    await lockTaken;
    try {
      await store.transaction(async (tx) => {
        expect(await tx.webhookQueue.due(now, { urls: [], deliveryIds: [], organizationIds: [] }, 10)).toEqual([]);
        // Were it locked by this claim, the delete's cascade would wait for it while this turn
        // waited for the webhook: the deadlock PostgreSQL broke with a 503 for one of them.
        expect(await raw("SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE SKIP LOCKED", deliveryId)).toHaveLength(1);
      });
    } finally {
      release();
      await deleting;
    }
  });

  test("a large source is staged in chunks, claimed by its message and read back whole; an unclaimed one is released", async () => {
    const large = randomBytes(700 * 1024);
    const staged = await store.blobs.prepare([large.subarray(0, 100), large.subarray(100)], clock.now());
    expect(staged.blobId).not.toBeNull();
    expect(staged.bytes.byteLength).toBe(0);
    const id = await storeMessage({ subject: "large" }, staged);
    expect(Buffer.compare((await store.messages.rawSource(id))!, large)).toBe(0);
    expect(await raw("SELECT 1 FROM staged_blobs WHERE blob_id = $1", staged.blobId)).toEqual([]);

    const unclaimed = await store.blobs.prepare([large], clock.now());
    await store.blobs.release([unclaimed.blobId!, staged.blobId!]);
    expect(await raw("SELECT 1 FROM blob_chunks WHERE blob_id = $1", unclaimed.blobId)).toEqual([]);
    // The claimed blob stays with its message.
    expect(Buffer.compare((await store.messages.rawSource(id))!, large)).toBe(0);
  });

  test("addresses match in any case; search finds substrings in any case, with % and _ taken literally", async () => {
    expect((await store.inboxes.findByEmail("mixed.case@engine.TEST"))?.id).toBe(inboxId);
    // The same address in another case, from two writers at once: neither is a second inbox.
    const now = clock.now();
    const again = () => store.transaction((tx) => tx.inboxes.insert({ id: newId("inb"), organizationId, name: null, email: "MIXED.case@engine.test", createdAt: now, updatedAt: now }));
    expect(await Promise.all([again(), again()])).toEqual([false, false]);
    const percent = await storeMessage({ subject: "Discount 100% today", text: "snake_case words" });
    await storeMessage({ subject: "Discount 1000 today", text: "snakeXcase words" });
    const found = async (text: string) => (await store.messageSearch.containing(inboxId, text, 1, 10)).map((row) => row.id);
    expect(await found("0% T")).toEqual([percent]);
    expect(await found("SNAKE_CASE")).toEqual([percent]);
    const walked = await store.messageSearch.walk(inboxId, { kind: "literal", text: "e_c" }, undefined, 10);
    expect(walked.rows.map((row) => row.id)).toEqual([percent]);
    expect(walked.next).toBeUndefined();
  });

  test("two nodes share a send window: together they never take more than its limit", async () => {
    const other = node();
    const windowStart = clock.now();
    const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? store : other).sendWindows.take(organizationId, windowStart, 7)));
    expect(taken.filter((count) => count !== undefined).sort((a, b) => a! - b!)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await store.sendWindows.used(organizationId, windowStart)).toBe(7);
  });

  test("a node whose secret key does not open the database's secrets is refused at start", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "inboxd-engine-"));
    try {
      const key = randomBytes(SECRET_KEY_BYTES);
      await openSecrets({ dataDir, secretKey: key }, clients[0]!, clock.now());
      expect((await openSecrets({ dataDir, secretKey: key }, clients[0]!, clock.now())).open(secretBox(key).seal("same"))).toBe("same");
      await expect(openSecrets({ dataDir, secretKey: randomBytes(SECRET_KEY_BYTES) }, clients[0]!, clock.now())).rejects.toThrow(ConfigError);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("a node refused for its key migrates nothing: the nodes still on the version before keep their schema", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "inboxd-engine-"));
    const databaseUrl = await postgres.createDatabase("inboxd_key_first");
    const admin = connect(databaseUrl);
    const open = (key: Buffer) => openPostgresStore(loadConfig({ INBOXD_DATA_DIR: dataDir, INBOXD_DATABASE_URL: databaseUrl, INBOXD_SECRET_KEY: key.toString("base64") }), { clock, log: createLogger("json", "silent") });
    const versions = async () => ((await admin.unsafe("SELECT version FROM schema_migrations ORDER BY version")) as { version: string }[]).map(({ version }) => version);
    try {
      const key = randomBytes(SECRET_KEY_BYTES);
      (await open(key)).close();
      // The database as the version before migration 0007 left it.
      await admin.unsafe("ALTER TABLE messages DROP COLUMN received_digest; DELETE FROM schema_migrations WHERE version = '0007_received_digest'");
      const before = await versions();
      await expect(open(randomBytes(SECRET_KEY_BYTES))).rejects.toThrow("does not open the secrets");
      expect(await versions()).toEqual(before);
      (await open(key)).close();
      expect(await versions()).toEqual([...before, "0007_received_digest"].sort());
    } finally {
      await admin.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
  test("a node does not start while another live node of the database serves another INBOXD_MAIL_DOMAIN (each would refuse the other's inboxes' mail)", async () => {
    const databaseUrl = await postgres.createDatabase("inboxd_mail_domains");
    const admin = connect(databaseUrl);
    const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), "inboxd-engine-")));
    const key = randomBytes(SECRET_KEY_BYTES).toString("base64");
    const log = createLogger("json", "silent");
    const open = (dataDir: string, mailDomain: string) => openPostgresStore(loadConfig({ INBOXD_DATA_DIR: dataDir, INBOXD_DATABASE_URL: databaseUrl, INBOXD_SECRET_KEY: key, INBOXD_MAIL_DOMAIN: mailDomain }), { clock, log });
    /** As `inboxd serve` starts: the store, then its maintenance, where the node joins the others. */
    const running = async (dataDir: string, mailDomain: string) => {
      const store = await open(dataDir, mailDomain);
      try {
        return { store, maintenance: await store.startMaintenance(log) };
      } catch (error) {
        store.close();
        throw error;
      }
    };
    const stop = async ({ store, maintenance }: Awaited<ReturnType<typeof running>>) => {
      await maintenance.stop();
      store.close();
    };
    try {
      const first = await running(dirs[0]!, "one.example");
      const second = await running(dirs[1]!, "one.example");
      const refused = running(dirs[2]!, "two.example");
      await expect(refused).rejects.toThrow(ConfigError);
      await expect(refused).rejects.toThrow(/^INBOXD_MAIL_DOMAIN: another node of this database, .+ \(seen \d+ s ago\), serves one\.example, this one two\.example/);
      // A command run beside the nodes (migrate, dns) opens the store without joining them, whatever its settings.
      (await open(dirs[2]!, "two.example")).close();
      expect(await admin.unsafe("SELECT count(*)::int AS n FROM nodes")).toEqual([{ n: 2 }]);
      // A node's restart is no other node; a clean stop leaves the table, and while one node still serves the old domain the new is refused.
      await stop(first);
      await stop(await running(dirs[0]!, "one.example"));
      await expect(running(dirs[2]!, "two.example")).rejects.toThrow(ConfigError);
      await stop(second);
      expect(await admin.unsafe("SELECT count(*)::int AS n FROM nodes")).toEqual([{ n: 0 }]);
      const renamed = await running(dirs[0]!, "two.example");
      // A node that died (no clean stop) counts until its row is older than a lease.
      await admin.unsafe("INSERT INTO nodes (name, mail_domain, seen_at) VALUES ('died@elsewhere:/var/lib/inboxd', 'one.example', $1)", [clock.now() - 31_000]);
      await stop(await running(dirs[2]!, "two.example"));
      await stop(renamed);
    } finally {
      await admin.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });
});
