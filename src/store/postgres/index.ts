/**
 * The PostgreSQL engine: the Store (../store.ts) on a pool of connections (./connection.ts) that
 * several inboxd nodes share. Every aggregate is async by nature here; they are built on the
 * pool for single statements and again on a transaction's own connection for `transaction`, whose
 * nested calls are savepoints. `transactionBatched` is `transaction`: PostgreSQL's own group commit
 * (commit_delay) is the server's to tune, and each transaction has a connection of its own.
 */
import { holdDataDirLock, prepareDataDir } from "../sqlite/open";
import { sql } from "drizzle-orm";
import type { SQL as BunSql } from "bun";
import { Clock } from "../../clock";
import type { Config } from "../../config";
import type { Logger } from "../../log";
import { runningTogether } from "../../running-part";
import { keylessBox, type SecretBox } from "../secret-box";
import type { Aggregates, Store, Transaction, TransactionOptions } from "../store";
import { accessRulesStore } from "./access-rules";
import { accountsStore } from "./accounts";
import { blobsOn, blobStaging, type PgBlobs } from "./blobs";
import { connect, connectServing, unreachable } from "./connection";
import { drizzleOn, type PgDb } from "./db";
import { deliveryAggregateBuilders } from "./delivery-aggregates";
import { draftsStore } from "./drafts";
import { eventsStore } from "./events";
import { idempotencyKeysStore } from "./idempotency-keys";
import { inboxesStore } from "./inboxes";
import { leasesOf, nodeName, releaseEarlierRuns, startLeaseRenewal, type Leases } from "./leases";
import { joinNodes, stayJoined } from "./nodes";
import { loginThrottlesStore } from "./login-throttles";
import { messageSearchStore } from "./message-search";
import { messagesStore } from "./messages";
import { migrate } from "./migrate";
import { aggregatesReportingUnavailable, reportingUnavailable, transactionInTime, unavailableOr } from "./unavailable";
import { hasSecretBox, openSecrets } from "./secrets";
import { sendWindowsStore } from "./send-windows";
import { threadsStore } from "./threads";
import { listenForWakeUps, type WakeUp } from "./wake-ups";

/** What aggregates share besides their connection. */
export interface AggregateContext {
  /** Seals webhook secrets and DKIM private keys as they are written, opens them as they are read. */
  secrets: SecretBox;
  /** Large values on the same connection (./blobs.ts). */
  blobs: PgBlobs;
  /** Told of each event written: the store wakes the webhook queue and the event streams once it is committed. */
  eventRecorded: () => void;
  /** Whether `db` is a transaction's connection (else the pool, where each statement commits alone). */
  inTransaction: boolean;
  /** This node's claims of queue rows (./leases.ts). */
  leases: Leases;
}

export interface PostgresStoreOptions {
  /** This run's claims of queue rows (./leases.ts); a node of its own, on a clock of its own, unless given. */
  leases?: Leases;
  /** Told when another node (or this one) committed queued work or events (./wake-ups.ts). */
  onWake?: (what: WakeUp) => void;
  secrets?: SecretBox;
  /** Told each batched transaction's time until committed (metrics). */
  onCommitted?: (seconds: number) => void;
  /** Told after each commit that recorded events: their webhook deliveries are there to claim. */
  onEventsCommitted?: () => void;
}

/** A blob staged this long ago and never claimed is an orphan: its writer died (other nodes' writes under way are younger). */
const ORPHAN_AGE_MS = 60 * 60 * 1000;

/** How each aggregate is built on a connection (the pool, or a transaction's). */
export type AggregateBuilders<T> = { [K in keyof T]: (db: PgDb, context: AggregateContext) => T[K] };

const aggregateBuilders: AggregateBuilders<Aggregates> = {
  accessRules: (db, { inTransaction }) => accessRulesStore(db, inTransaction),
  accounts: (db, { inTransaction }) => accountsStore(db, inTransaction),
  drafts: (db, { blobs, leases, inTransaction }) => draftsStore(db, blobs, leases, inTransaction),
  events: (db, context) => eventsStore(db, context),
  idempotencyKeys: (db, { blobs, leases }) => idempotencyKeysStore(db, blobs, leases),
  inboxes: (db, { inTransaction }) => inboxesStore(db, inTransaction),
  loginThrottles: (db, { inTransaction }) => loginThrottlesStore(db, inTransaction),
  messages: (db, { blobs, inTransaction }) => messagesStore(db, blobs, inTransaction),
  messageSearch: (db) => messageSearchStore(db),
  sendWindows: (db) => sendWindowsStore(db),
  threads: (db) => threadsStore(db),
  ...deliveryAggregateBuilders,
};
const aggregateNames = Object.keys(aggregateBuilders) as (keyof Aggregates)[];

/** Every aggregate on the pool, built once. */
function aggregatesOn(db: PgDb, context: AggregateContext): Aggregates {
  return Object.fromEntries(aggregateNames.map((name) => [name, aggregateBuilders[name](db, context)])) as unknown as Aggregates;
}

const connection = Symbol("connection");
type OnDemand = { [connection]: { db: PgDb; context: AggregateContext } };

/**
 * The aggregates of a transaction or savepoint, each built when first used. One uses two or three
 * of them, and building all 21 cost the event loop about 20 µs per transaction: once per
 * acceptance and per message the inbound queue stores (each in a savepoint of its own).
 */
const aggregatesOnDemandPrototype: object = Object.defineProperties(
  {},
  Object.fromEntries(
    aggregateNames.map((name) => [
      name,
      {
        get(this: OnDemand) {
          const { db, context } = this[connection];
          const aggregate = aggregateBuilders[name](db, context);
          Object.defineProperty(this, name, { value: aggregate, enumerable: true });
          return aggregate;
        },
      },
    ]),
  ),
);

function aggregatesOnDemand(db: PgDb, context: AggregateContext): Aggregates {
  return Object.assign(Object.create(aggregatesOnDemandPrototype) as OnDemand, { [connection]: { db, context } }) as unknown as Aggregates;
}

export function createPostgresStore(client: BunSql, options: PostgresStoreOptions = {}): Store {
  const db = drizzleOn(client);
  const secrets = options.secrets ?? keylessBox;
  const leases = options.leases ?? leasesOf(new Clock());
  const staging = blobStaging(db, leases.holder);
  const onEvents = () => options.onEventsCommitted?.();

  /** The aggregates on a transaction's connection; `recorded` notes that it wrote events. */
  const transactionOn = (tx: PgDb, recorded: () => void): Transaction =>
    Object.assign(aggregatesOnDemand(tx, { secrets, blobs: blobsOn(tx), eventRecorded: recorded, inTransaction: true, leases }), {
      transaction: <T>(work: (tx: Transaction) => Promise<T>) => tx.transaction((savepoint) => work(transactionOn(savepoint, recorded))),
    });

  async function transaction<T>(work: (tx: Transaction) => Promise<T>, { waitForDisk = true }: TransactionOptions = {}): Promise<T> {
    let recordedEvents = false;
    const value = await transactionInTime(db, async (tx) => {
      // The commit survives a crash of the server process, not of its machine, until the next durable one.
      if (!waitForDisk) await tx.execute(sql`SET LOCAL synchronous_commit = off`);
      return work(transactionOn(tx, () => (recordedEvents = true)));
    }).catch((error: unknown) => Promise.reject(unavailableOr(error)));
    if (recordedEvents) onEvents();
    return value;
  }

  return {
    ...aggregatesReportingUnavailable(aggregatesOn(db, { secrets, blobs: blobsOn(db), eventRecorded: onEvents, inTransaction: false, leases })),
    transaction,
    async transactionBatched<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
      const started = performance.now();
      const value = await transaction(work);
      options.onCommitted?.((performance.now() - started) / 1000);
      return value;
    },
    // Each chunk's transaction is bounded (transactionInTime), not the whole value's staging: a 25 MB value is a hundred of them.
    blobs: reportingUnavailable({ prepare: (parts: Uint8Array[], now: number) => staging.prepare(parts, now), release: (blobIds: string[]) => staging.release(blobIds) }, { inTime: false }),
    tag: (purpose, value) => secrets.tag(purpose, value),
    // The server runs its own maintenance (autovacuum, checkpoints); a node renews its queue
    // claims and listens for the other nodes' wake-ups.
    async startMaintenance(log) {
      return runningTogether("database maintenance", [startLeaseRenewal(db, leases, log), ...(options.onWake ? [listenForWakeUps(client, options.onWake, log)] : [])]);
    },
    close: () => void client.close(),
  };
}

/** INBOXD_DATABASE_URL's database, migrated, with its secrets: for the running server and the commands that write. */
export async function openPostgresStore(
  config: Config,
  { clock, log, onMigrated, ...storeOptions }: { clock: Clock; log: Logger; onMigrated?: (versions: string[]) => void } & Pick<PostgresStoreOptions, "onCommitted" | "onEventsCommitted" | "onWake">,
): Promise<Store> {
  // The node's own files (the self-signed certificate, the key file) stay in its data dir, and its
  // queue leases are named after it: one process per data dir, as on the embedded engine.
  prepareDataDir(config.dataDir);
  const lock = holdDataDirLock(config.dataDir);
  const refused = (error: unknown) => {
    lock.close();
    return unreachable(error, config.databaseUrl!, "INBOXD_DATABASE_URL");
  };
  const client = await connectServing(config.databaseUrl!).catch((error: unknown) => {
    throw refused(error);
  });
  try {
    // The key is checked before the migrations wherever it can be: a node refused for its key
    // migrates nothing under the others, which may still run the version before.
    const checkedFirst = (await hasSecretBox(client)) ? await openSecrets(config, client, clock.now()) : undefined;
    const applied = await migrate(client, clock.now());
    if (applied.length) log.info("migrations applied", { versions: applied.join(",") });
    onMigrated?.(applied);
    const secrets = checkedFirst ?? (await openSecrets(config, client, clock.now()));
    const node = { name: nodeName(config), mailDomain: config.mailDomain };
    const leases = leasesOf(clock, node.name);
    const orphans = await blobStaging(drizzleOn(client), leases.holder).removeOrphans(clock.now() - ORPHAN_AGE_MS);
    const freed = await releaseEarlierRuns(drizzleOn(client), leases, clock.now());
    if (freed) log.info("queue rows claimed by this node before it stopped are free again", { rows: freed });
    if (orphans) log.info("removed unfinished message blobs", { blobs: orphans });
    const store = createPostgresStore(client, { secrets, leases, ...storeOptions });
    return {
      ...store,
      // Only a serving node joins the nodes (./nodes.ts): a command run beside them (migrate, dns) is none.
      async startMaintenance(log) {
        await joinNodes(drizzleOn(client), node, clock.now());
        return runningTogether("database maintenance", [await store.startMaintenance(log), stayJoined(drizzleOn(client), node, clock, log)]);
      },
      close: () => {
        store.close();
        lock.close();
      },
    };
  } catch (error) {
    await client.close();
    throw refused(error);
  }
}

/** For the read-only look-ups of `inboxd dns` and `inboxd doctor`: no migration, secrets read as stored. */
export function openPostgresStoreReadOnly(config: Pick<Config, "databaseUrl">): Store {
  return createPostgresStore(connect(config.databaseUrl!));
}
