/**
 * `inboxd backup` and `inboxd restore`: a consistent copy of the database while the server runs,
 * and putting one back into a stopped installation. SQLite's `VACUUM INTO` writes the copy from
 * one read transaction, compacted, with no WAL beside it; bun:sqlite has no online-backup API.
 */
import { Database } from "bun:sqlite";
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../config";
import { DataDirLockedError, holdDataDirLock, prepareDataDir } from "./open";

export type BackupRequest = { source: string; target: string };
export type BackupReply = { done: true } | { error: string };

const PROGRESS_EVERY_MS = 200;

// In the single executable every module has the executable's URL, and the worker, a second
// entry point of `bun build --compile` (package.json), sits at its path below src/.
const workerUrl = import.meta.path.startsWith("/$bunfs/") ? new URL("./db/backup-worker.ts", import.meta.url) : new URL("./backup-worker.ts", import.meta.url);

const databasePath = (dataDir: string) => join(dataDir, "inboxd.db");
const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0);

/**
 * Copies the data dir's database to `target` (which must not exist yet); `onProgress` hears the
 * bytes written so far against the live database's size (an upper bound: the copy is compacted).
 */
export async function backupDatabase(dataDir: string, target: string, onProgress: (written: number, estimate: number) => void): Promise<{ bytes: number }> {
  const source = databasePath(dataDir);
  if (!existsSync(source)) throw new ConfigError(`INBOXD_DATA_DIR: no database at ${source}`);
  // Made empty first, mode 0600 whatever the umask (the copy holds everything), which VACUUM INTO
  // accepts; "wx" also refuses a file that exists.
  try {
    closeSync(openSync(target, "wx", 0o600));
  } catch (error) {
    throw new ConfigError((error as { code?: string }).code === "EEXIST" ? `${target} exists already: choose a new file name` : `cannot write ${target}: ${(error as Error).message}`);
  }
  chmodSync(target, 0o600);
  const estimate = sizeOf(source) + sizeOf(`${source}-wal`);
  const worker = new Worker(workerUrl);
  const timer = setInterval(() => onProgress(sizeOf(target), estimate), PROGRESS_EVERY_MS);
  try {
    const reply = await new Promise<BackupReply>((resolve) => {
      worker.onmessage = ({ data }: MessageEvent<BackupReply>) => resolve(data);
      worker.onerror = (event) => resolve({ error: event.message });
      worker.postMessage({ source, target } satisfies BackupRequest);
    });
    if ("error" in reply) {
      rmSync(target, { force: true });
      throw new Error(`backup failed: ${reply.error}`);
    }
  } finally {
    clearInterval(timer);
    worker.terminate();
  }
  syncFile(target);
  const bytes = sizeOf(target);
  onProgress(bytes, bytes);
  return { bytes };
}

/** What a file holds, checked before it may replace an installation's database. */
export function describeBackup(path: string): { migrations: number; messages: number } {
  let sqlite: Database;
  try {
    sqlite = new Database(path, { readonly: true });
  } catch (error) {
    throw new ConfigError(`${path}: cannot open it as a database (${(error as Error).message})`);
  }
  try {
    const check = sqlite.query<{ quick_check: string }, []>("PRAGMA quick_check").get()?.quick_check;
    if (check !== "ok") throw new ConfigError(`${path}: the database is damaged (${check})`);
    const hasMigrations = sqlite.query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
    if (!hasMigrations) throw new ConfigError(`${path}: not an inboxd database (no schema_migrations table)`);
    const migrations = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM schema_migrations").get()!.n;
    const messages = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n;
    return { migrations, messages };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`${path}: not a usable inboxd database (${(error as Error).message})`);
  } finally {
    sqlite.close();
  }
}

/**
 * Puts a backup in place of the data dir's database. Only while no inboxd runs on the data dir
 * (its lock is taken for the while), and over an existing database only with `force`.
 */
export function restoreDatabase(dataDir: string, backup: string, force: boolean): { messages: number } {
  const { messages } = describeBackup(backup);
  prepareDataDir(dataDir);
  let lock;
  try {
    lock = holdDataDirLock(dataDir);
  } catch (error) {
    if (error instanceof DataDirLockedError) throw new ConfigError(`inboxd is running on ${dataDir}: stop it first (systemctl stop inboxd)`);
    throw error;
  }
  try {
    const target = databasePath(dataDir);
    if (existsSync(target) && !force) throw new ConfigError(`${target} exists: add --force to replace it with ${backup}`);
    const staging = `${target}.restoring`;
    copyFileSync(backup, staging);
    chmodSync(staging, 0o600);
    syncFile(staging);
    // The old WAL belongs to the old database: left beside the new one, SQLite would replay it.
    for (const suffix of ["-wal", "-shm"]) rmSync(`${target}${suffix}`, { force: true });
    renameSync(staging, target);
    syncFile(dataDir);
    return { messages };
  } finally {
    lock.close();
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
