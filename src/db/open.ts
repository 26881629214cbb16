/** Opens the one SQLite database of a data dir. Every pragma is set here and nowhere else. */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export class DataDirLockedError extends Error {}

export interface OpenedDatabase {
  sqlite: Database;
  close(): void;
}

/**
 * Holds an exclusive SQLite lock on `inboxd.lock` for the life of the process. The operating
 * system drops it when the process dies (even by kill -9), so a stale lock never blocks a restart,
 * while a second live process on the same data dir is refused before it touches the queue.
 */
function lockDataDir(dataDir: string): Database {
  const lock = new Database(join(dataDir, "inboxd.lock"), { create: true });
  try {
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("PRAGMA locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE");
    lock.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER)");
  } catch {
    lock.close();
    throw new DataDirLockedError(`another inboxd is already running on data dir ${dataDir} (its lock ${join(dataDir, "inboxd.lock")} is held)`);
  }
  return lock;
}

export function openDatabase(dataDir: string): OpenedDatabase {
  mkdirSync(dataDir, { recursive: true });
  const lock = lockDataDir(dataDir);
  const sqlite = new Database(join(dataDir, "inboxd.db"), { create: true, strict: true });
  // WAL first: the other pragmas then apply to a database that readers and the writer share.
  sqlite.exec("PRAGMA journal_mode = WAL");
  // FULL: a commit is on disk before the 250/201 that follows it (never lose accepted mail).
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  return {
    sqlite,
    close() {
      sqlite.close();
      lock.close();
    },
  };
}
