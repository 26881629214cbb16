/**
 * The store's entry: the interface services use (./store.ts, ./records.ts) and the engine that
 * implements it: PostgreSQL (./postgres/) when INBOXD_DATABASE_URL is set, else the embedded SQLite
 * (./sqlite/).
 */
import { resolve } from "node:path";
import type { Config } from "../config";
import type { PostgresStoreOptions } from "./postgres/index";
import { openSqliteStore, openSqliteStoreReadOnly } from "./sqlite/index";
import type { Store } from "./store";

export type * from "./records";
export type * from "./store";
export { DataDirLockedError as StoreInUseError } from "./sqlite/open";
// `inboxd backup` and `inboxd restore`: the embedded engine's files, with the secret key beside them.
export { backupDatabase, restoreDatabase } from "./sqlite/backup";

/**
 * The PostgreSQL engine loads only where INBOXD_DATABASE_URL names a database: its aggregates and
 * drizzle's pg dialect are resident memory that an embedded installation would hold for nothing.
 */
const postgresEngine = () => import("./postgres/index");

/** The configured engine's store, migrated, with its secrets: for the running server and the commands that write. */
export async function openStore(config: Config, options: Parameters<typeof openSqliteStore>[1] & Pick<PostgresStoreOptions, "onWake">): Promise<Store> {
  // A PostgreSQL commit is on disk when the server answers it: no sync of inboxd's own to fail.
  const { onSyncFailed: _onSyncFailed, ...shared } = options;
  if (config.databaseUrl) return (await postgresEngine()).openPostgresStore(config, shared);
  // Other nodes' wake-ups exist on a shared database only: one process holds an embedded one.
  const { onWake: _onWake, ...embedded } = options;
  return openSqliteStore(config, embedded);
}

/** For reading beside a running server (`inboxd dns`, `inboxd doctor`); undefined when the data dir holds no database yet. */
export async function openStoreReadOnly(config: Pick<Config, "dataDir" | "databaseUrl">): Promise<Store | undefined> {
  return config.databaseUrl ? (await postgresEngine()).openPostgresStoreReadOnly(config) : openSqliteStoreReadOnly(config);
}

/** The database as messages name it: the SQLite file, or the PostgreSQL host and database without credentials. */
export function databaseLabel(config: Pick<Config, "dataDir" | "databaseUrl">): string {
  if (!config.databaseUrl) return resolve(config.dataDir, "inboxd.db");
  const url = new URL(config.databaseUrl);
  return `PostgreSQL ${url.host}${url.pathname}`;
}
