/**
 * The store's entry: the interface services use (./store.ts, ./records.ts) and the engine that
 * implements it. The embedded SQLite is the one engine today (./sqlite/).
 */
export type * from "./records";
export type * from "./store";
export { openSqliteStore as openStore } from "./sqlite/index";
export { openSqliteStoreReadOnly as openStoreReadOnly } from "./sqlite/index";
export { DataDirLockedError as StoreInUseError } from "./sqlite/open";
// `inboxd backup` and `inboxd restore`: the embedded engine's files, with the secret key beside them.
export { backupDatabase, restoreDatabase } from "./sqlite/backup";
