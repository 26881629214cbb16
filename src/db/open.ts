/** Opens the one SQLite database of a data dir. Every pragma is set here and nowhere else. */
import { Database } from "bun:sqlite";
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../config";

export class DataDirLockedError extends Error {}

const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
/** SQLite's default: a commit that takes the WAL past this many pages checkpoints it. */
const CHECKPOINT_ON_COMMIT_PAGES = 1000;
/**
 * Past this many pages (64 MiB of 4 KiB pages) a WAL that never emptied under a steady stream of
 * commits is emptied by a RESTART checkpoint, which holds the writer for the last pages only.
 */
const RESTART_WAL_PAGES = 16 * 1024;

export interface OpenedDatabase {
  sqlite: Database;
  close(): void;
}

/**
 * Holds an exclusive SQLite lock on `inboxd.lock` for the life of the process. The operating
 * system drops it when the process dies (even by kill -9), so a stale lock never blocks a restart,
 * while a second live process on the same data dir is refused before it touches the queue.
 */
export function holdDataDirLock(dataDir: string): Database {
  const lock = new Database(join(dataDir, "inboxd.lock"), { create: true });
  try {
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("PRAGMA locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE");
    lock.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER)");
  } catch (error) {
    lock.close();
    // Only "busy" means another process holds it; anything else is the data dir's own fault.
    if ((error as { code?: string }).code !== "SQLITE_BUSY") throw new ConfigError(`INBOXD_DATA_DIR: cannot lock ${join(dataDir, "inboxd.lock")}: ${(error as Error).message}`);
    throw new DataDirLockedError(`another inboxd is already running on data dir ${dataDir} (its lock ${join(dataDir, "inboxd.lock")} is held)`);
  }
  return lock;
}

/** The data dir exists (made if missing), is a directory, and this user may write in it. */
export function prepareDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true });
    if (!statSync(dataDir).isDirectory()) throw new Error("it is not a directory");
    accessSync(dataDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const reason = (error as { code?: string }).code === "EEXIST" || (error as { code?: string }).code === "ENOTDIR" ? "it is not a directory" : (error as Error).message;
    throw new ConfigError(`INBOXD_DATA_DIR: cannot use ${dataDir}: ${reason}`);
  }
}

export function openDatabase(dataDir: string): OpenedDatabase {
  prepareDataDir(dataDir);
  const lock = holdDataDirLock(dataDir);
  const sqlite = new Database(join(dataDir, "inboxd.db"), { create: true, strict: true });
  // WAL first: the other pragmas then apply to a database that readers and the writer share.
  sqlite.exec("PRAGMA journal_mode = WAL");
  // FULL: a commit is on disk before the 250/201 that follows it (never lose accepted mail).
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  // 64 MiB of page cache (SQLite's default is 2 MiB): the id, inbox and queue indexes a busy
  // server reads on every message stay in memory, instead of being read again from the file and
  // looked up in the WAL. It grows only as pages are read.
  sqlite.exec("PRAGMA cache_size = -65536");
  // The WAL file is reused after each checkpoint that empties it; past this size it is also
  // truncated then, so that one long burst of mail does not hold its disk space for good.
  sqlite.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  return {
    sqlite,
    close() {
      sqlite.close();
      lock.close();
    },
  };
}

/**
 * Runs `commit` (a whole transaction) with `synchronous = NORMAL`: in WAL mode its COMMIT then
 * writes the WAL without waiting for the disk, and the caller owes an fsync of the WAL before it
 * reports the commit (store/group-commit.ts does it off the event loop). FULL again afterwards, so
 * every other commit is on disk when it returns.
 */
export function commitWithoutWaitingForDisk<T>(sqlite: Database, commit: () => T): T {
  sqlite.exec("PRAGMA synchronous = NORMAL");
  try {
    return commit();
  } finally {
    sqlite.exec("PRAGMA synchronous = FULL");
  }
}

/**
 * Whether commits on this connection checkpoint the WAL themselves (SQLite's default), or leave it
 * to a connection of their own on another thread (./checkpoints).
 */
export function setCheckpointOnCommit(sqlite: Database, enabled: boolean): void {
  sqlite.exec(`PRAGMA wal_autocheckpoint = ${enabled ? CHECKPOINT_ON_COMMIT_PAGES : 0}`);
}

/** A second connection to the data dir's database that only checkpoints its WAL (./checkpoint-worker). */
export function openCheckpointConnection(dataDir: string): Database {
  const sqlite = new Database(join(dataDir, "inboxd.db"), { create: false, strict: true });
  // A checkpoint syncs the WAL before it copies pages into the database, and the database after.
  sqlite.exec("PRAGMA synchronous = FULL");
  // Only the RESTART checkpoint waits, for the writer's current transaction.
  sqlite.exec("PRAGMA busy_timeout = 5000");
  return sqlite;
}

/**
 * Copies what the WAL holds into the database file. PASSIVE neither waits for the writer nor
 * holds it up; the writer starts the WAL over at its next transaction once all of it is copied.
 * A WAL that grew past RESTART_WAL_PAGES because that moment never came is emptied by RESTART.
 */
export function checkpointWal(sqlite: Database): void {
  const { log } = sqlite.query<{ log: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!;
  if (log > RESTART_WAL_PAGES) sqlite.query("PRAGMA wal_checkpoint(RESTART)").get();
}
