/**
 * The embedded engine: the Store (../store.ts) on one bun:sqlite connection. The aggregates in
 * this folder are synchronous, as bun:sqlite is; here each call becomes a turn on the connection
 * (./turns.ts), and a transaction holds the connection from BEGIN to COMMIT, so that an await
 * inside it never lets another request's statements in.
 */
import type { Database } from "bun:sqlite";
import { dirname, resolve } from "node:path";
import type { Clock } from "../../clock";
import type { Config } from "../../config";
import { takeTurn } from "../../event-loop";
import type { Logger } from "../../log";
import { runningTogether } from "../../running-part";
import type { Store, Transaction, TransactionOptions } from "../store";
import { acceptedInboundStore } from "./accepted-inbound";
import { accessRulesStore } from "./access-rules";
import { accountsStore } from "./accounts";
import { databasePath, removeRestoring, restoringFile } from "./backup";
import { blobStore } from "./blobs";
import { startCheckpoints } from "./checkpoints";
import { drizzleOf } from "./db";
import { deliveriesStore } from "./deliveries";
import { draftsStore } from "./drafts";
import { idempotencyKeysStore } from "./idempotency-keys";
import { dkimKeysStore } from "./dkim-keys";
import { certificatesStore } from "./certificates";
import { mtaStsPoliciesStore } from "./mta-sts-policies";
import { tlsReportsStore } from "./tls-reports";
import { domainsStore } from "./domains";
import { eventsStore } from "./events";
import { eventWatermark, type CommitDurability } from "./event-watermark";
import { groupCommit, oneSyncAtATime, stoppingOnFailedSync, walSync, type BatchOutcome, type SyncCommits } from "./group-commit";
import { inboxesStore } from "./inboxes";
import { loginThrottlesStore } from "./login-throttles";
import { messageSearchStore } from "./message-search";
import { windowedSearch } from "./windowed-search";
import { messagesStore } from "./messages";
import { migrate } from "./migrate";
import { openDatabase, QUICK_CHECK_WAIT_MS } from "./open";
import { openDatabaseReadOnly } from "./read-only";
import { searchIndexStore } from "./search-index";
import { startSearchIndexing, type SearchIndexing } from "./search-indexing";
import { openSecretBox } from "./secret-key";
import { sealStoredSecrets } from "./secrets";
import { keylessBox, type SecretBox } from "../secret-box";
import { sendWindowsStore } from "./send-windows";
import { suppressionsStore } from "./suppressions";
import { threadsStore } from "./threads";
import { ConnectionTurns } from "./turns";
import { webhookQueueStore } from "./webhook-queue";
import { webhooksStore } from "./webhooks";
import { WebhookSubscriptions } from "./webhook-subscriptions";

/** Each method of an aggregate as the Store interface has it: returning a Promise. */
type Asynced<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K] };

export interface StoreOptions {
  /**
   * Seals webhook secrets and DKIM private keys as they are written and opens them as they are
   * read (./secrets); without it, as for the read-only look-ups of `inboxd dns` and `inboxd
   * doctor`, they are read as stored and cannot be written.
   */
  secrets?: SecretBox;
  /** Told each batched commit's time until it is on disk (metrics). */
  onCommitted?: (seconds: number) => void;
  /** How batched commits are made durable; an fdatasync of the WAL unless given (tests). */
  syncCommits?: SyncCommits;
  /** Told when commits already made could not be made durable; the process is to stop (stoppingOnFailedSync). */
  onSyncFailed?: (error: unknown) => void;
  /** Told after each commit that recorded events: their webhook deliveries are there to claim. */
  onEventsCommitted?: () => void;
}

export function createStore(sqlite: Database, options: StoreOptions = {}): Store {
  const db = drizzleOf(sqlite);
  const secrets = options.secrets ?? keylessBox;
  const turns = new ConnectionTurns();
  const searchIndex = searchIndexStore(sqlite);
  const subscriptions = new WebhookSubscriptions(sqlite);
  let eventsInTransaction = false;
  const wal = options.syncCommits ? undefined : walSync(sqlite);
  const syncCommits = oneSyncAtATime(stoppingOnFailedSync(options.syncCommits ?? wal?.sync, options.onSyncFailed));
  const watermark = eventWatermark(sqlite, syncCommits, () => options.onEventsCommitted?.());
  const eventRecorded = (id: string) => {
    watermark.emitted(id);
    if (sqlite.inTransaction) eventsInTransaction = true;
    // Outside a transaction the statement committed itself, synchronous = FULL.
    else watermark.committed("synced", true);
  };
  const blobs = blobStore(sqlite, (write) => turns.call(write));
  const aggregates = {
    accessRules: accessRulesStore(db),
    accounts: accountsStore(db),
    certificates: certificatesStore(db, secrets),
    mtaStsPolicies: mtaStsPoliciesStore(db),
    tlsReports: tlsReportsStore(db),
    deliveries: deliveriesStore(db, blobs),
    dkimKeys: dkimKeysStore(db, secrets),
    domains: domainsStore(db),
    events: eventsStore(sqlite, subscriptions, blobs, eventRecorded, watermark.visibleUpTo),
    inboxes: inboxesStore(db),
    loginThrottles: loginThrottlesStore(db),
    messages: messagesStore(db, blobs),
    messageSearch: messageSearchStore(db),
    sendWindows: sendWindowsStore(db),
    suppressions: suppressionsStore(db),
    threads: threadsStore(db),
    webhooks: webhooksStore(db, secrets, blobs, subscriptions),
    webhookQueue: webhookQueueStore(db, secrets, blobs),
    acceptedInbound: acceptedInboundStore(db, blobs),
    drafts: draftsStore(db, blobs),
    idempotencyKeys: idempotencyKeysStore(db, blobs),
  };

  // sqlite.query caches the statement by its text; sqlite.run would compile it on every call.
  const execute = (statement: string) => sqlite.query(statement).run();
  let savepoints = 0;
  /** A nested transaction: a savepoint of the one that holds the connection. */
  async function savepoint<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    const name = `nested_${++savepoints}`;
    execute(`SAVEPOINT ${name}`);
    try {
      const value = await work(tx);
      execute(`RELEASE ${name}`);
      return value;
    } catch (error) {
      execute(`ROLLBACK TO ${name}`);
      subscriptions.forget();
      execute(`RELEASE ${name}`);
      throw error;
    } finally {
      savepoints--;
    }
  }

  /** BEGIN … COMMIT around `work`, the connection already held. */
  async function atomically<T>(work: () => Promise<T>, durability: CommitDurability): Promise<T> {
    const waitForDisk = durability === "synced";
    // `synchronous` cannot change inside a transaction: NORMAL makes this COMMIT skip its fsync.
    if (!waitForDisk) execute("PRAGMA synchronous = NORMAL");
    try {
      execute("BEGIN IMMEDIATE");
      eventsInTransaction = false;
      try {
        const value = await work();
        execute("COMMIT");
        watermark.committed(durability, eventsInTransaction);
        return value;
      } catch (error) {
        if (sqlite.inTransaction) execute("ROLLBACK");
        subscriptions.forget();
        throw error;
      }
    } finally {
      if (!waitForDisk) execute("PRAGMA synchronous = FULL");
    }
  }

  // A search inside a transaction sees the transaction's own writes; nothing there waits for the index.
  const tx: Transaction = { ...asyncAggregates(aggregates, settleNow), messageSearch: windowedSearch(aggregates.messageSearch, settleNow, async () => {}), transaction: savepoint };

  const transactionBatched = groupCommit<Transaction>(sqlite, {
    onCommitted: options.onCommitted,
    syncCommits,
    syncStarting: watermark.syncStarting,
    commitBatch: (writes) =>
      turns.exclusive(() =>
        atomically(async () => {
          const outcomes: BatchOutcome[] = [];
          for (const write of writes) {
            // A failing write rolls back its own savepoint only; the others in the batch still commit.
            outcomes.push(await savepoint(write).then((value): BatchOutcome => ({ ok: true, value }), (error: unknown): BatchOutcome => ({ ok: false, error })));
          }
          return outcomes;
        }, "by its batch"),
      ),
  });

  const call = <T>(statements: () => T) => turns.call(statements);
  const searchIndexing: SearchIndexing = {
    pendingAtMost: () => call(() => searchIndex.pendingAtMost()),
    // Not waiting for the disk: the messages stay noted until this commit, and a later one syncs it.
    indexBatch: () => turns.exclusive(() => atomically(async () => searchIndex.indexBatch(), "later")),
  };
  /**
   * Indexes every message noted so far, a batch per turn of the event loop (./search-index.ts);
   * those noted meanwhile are left to the background, so that mail arriving fast cannot hold a search.
   */
  async function searchIndexCaughtUp() {
    const noted = await searchIndexing.pendingAtMost();
    for (let indexed = 0; indexed < noted; ) {
      const batch = await searchIndexing.indexBatch();
      if (batch === 0) return;
      indexed += batch;
      await takeTurn();
    }
  }
  return {
    ...asyncAggregates(aggregates, call),
    // A search reads the index once every message committed before it is in it.
    messageSearch: windowedSearch(aggregates.messageSearch, call, searchIndexCaughtUp),
    transaction: <T>(work: (tx: Transaction) => Promise<T>, { waitForDisk = true }: TransactionOptions = {}) => turns.exclusive(() => atomically(() => work(tx), waitForDisk ? "synced" : "later")),
    transactionBatched,
    blobs: {
      prepare: (parts, now) => blobs.prepare(parts, now),
      release: (blobIds) => turns.call(() => blobs.release(blobIds)),
    },
    tag: (purpose, value) => secrets.tag(purpose, value),
    startMaintenance: async (log) => runningTogether("database maintenance", [startCheckpoints(sqlite, dirname(sqlite.filename), log), startSearchIndexing(searchIndexing, log)]),
    close: () => {
      sqlite.close();
      wal?.close();
    },
  };
}

/** In a transaction, which already holds the connection: the statements run at once. */
function settleNow<T>(statements: () => T): Promise<T> {
  try {
    return Promise.resolve(statements());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Typed member by member, so that the compiler checks each aggregate against the interface where it is used as one. */
function asyncAggregates<T extends Record<string, object>>(aggregates: T, run: <R>(statements: () => R) => Promise<R>): { [K in keyof T]: Asynced<T[K]> } {
  const wrapped: Record<string, unknown> = {};
  for (const [name, aggregate] of Object.entries(aggregates)) wrapped[name] = asynced(aggregate, run);
  return wrapped as { [K in keyof T]: Asynced<T[K]> };
}

function asynced<T extends object>(aggregate: T, run: <R>(statements: () => R) => Promise<R>): Asynced<T> {
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(aggregate)) {
    wrapped[name] = typeof member === "function" ? (...args: unknown[]) => run(() => (member as (...a: unknown[]) => unknown).apply(aggregate, args)) : member;
  }
  return wrapped as Asynced<T>;
}

/**
 * The data dir's database, opened, migrated, with its secrets; for the running server and the
 * commands that write.
 */
export function openSqliteStore(
  config: Config,
  { clock, log, onMigrated, ...storeOptions }: { clock: Clock; log: Logger; onMigrated?: (versions: string[]) => void } & Pick<StoreOptions, "onCommitted" | "onEventsCommitted" | "onSyncFailed">,
): Store {
  const database = openDatabase(config.dataDir, { cacheMb: config.dbCacheMb });
  let secrets: SecretBox;
  try {
    secrets = openSecretBox(config, database.sqlite);
    const applied = migrate(database.sqlite, clock.now());
    if (applied.length) log.info("migrations applied", { versions: applied.join(",") });
    onMigrated?.(applied);
    const sealedNow = sealStoredSecrets(database.sqlite, secrets, clock.now());
    if (sealedNow) log.info("secrets stored in the clear are now sealed", { count: sealedNow });
    // A restore killed while it copied leaves its copy of a backup (./backup.ts): the data dir's lock, held now, says no restore runs.
    const unfinishedRestore = restoringFile(databasePath(config.dataDir));
    if (removeRestoring(unfinishedRestore)) log.warn("removed the copy a restore that did not finish left beside the database; run that restore again if it was wanted", { file: unfinishedRestore });
    // Chunks a crash left behind before their message was stored (./blobs.ts).
    const orphans = blobStore(database.sqlite, (write) => Promise.resolve(write())).removeOrphans();
    if (orphans) log.info("removed unfinished message blobs", { blobs: orphans });
  } catch (e) {
    database.close();
    throw e;
  }
  if (database.unfinishedCheck) {
    const path = resolve(config.dataDir, "inboxd.db");
    log.warn("the database check (PRAGMA quick_check) did not finish in time: started without it; it goes on, and its outcome follows", { database: path, waitedMs: QUICK_CHECK_WAIT_MS });
    void database.unfinishedCheck.then((finding) => {
      if (finding === "ok") log.info("the database check finished: no damage", { database: path });
      else log.error("the database check found damage: stop inboxd and restore the last backup (inboxd restore FILE --force)", { database: path, finding });
    });
  }
  const store = createStore(database.sqlite, { secrets, ...storeOptions });
  return {
    ...store,
    close: () => {
      store.close();
      database.close();
    },
  };
}

/**
 * The data dir's database for reading beside a running server (`inboxd dns`, `inboxd doctor`): no
 * lock, no writes, secrets read as stored. Undefined when the data dir holds no database yet.
 */
export function openSqliteStoreReadOnly(config: Pick<Config, "dataDir">): Store | undefined {
  const sqlite = openDatabaseReadOnly(config.dataDir);
  return sqlite && createStore(sqlite);
}
