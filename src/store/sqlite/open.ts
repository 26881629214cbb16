/** Opens the one SQLite database of a data dir. Every pragma is set here and nowhere else. */
import { Database } from "bun:sqlite";
import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../../config";
import { workerUrl } from "../../workers/url";
import type { QuickCheckRequest } from "./quick-check-worker";

export class DataDirLockedError extends Error {}

const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
/** SQLite's default: a commit that takes the WAL past this many pages checkpoints it. */
const CHECKPOINT_ON_COMMIT_PAGES = 1000;
/**
 * Past this many pages (64 MiB of 4 KiB pages) a WAL that never emptied under a steady stream of
 * commits is emptied by a RESTART checkpoint once the writer rests. A RESTART holds every writer
 * until it has copied the last pages and synced the database file: under a flood of large
 * messages (60 MB/s into the WAL) that held the event loop's commits, and with them every SMTP
 * session and request, for 300-500 ms each time (test/hardening/memory-in-flight.test.ts).
 */
const RESTART_WAL_PAGES = 16 * 1024;
/** Past this many pages (1 GiB) the WAL is emptied even while writes go on: the disk comes first. */
const RESTART_BUSY_WAL_PAGES = 256 * 1024;

export interface OpenedDatabase {
  sqlite: Database;
  /**
   * Set when the start-up integrity check outlasted QUICK_CHECK_WAIT_MS: it goes on beside the
   * server, and this settles with its outcome ("ok", or what it found).
   */
  unfinishedCheck?: Promise<string>;
  close(): void;
}

/** How long a start waits for `PRAGMA quick_check`; after it the check finishes beside the server. */
export const QUICK_CHECK_WAIT_MS = 10_000;
/** Files that only an installation that has run makes in its data dir; the database was there before them. */
const INSTALLATION_FILES = ["secret.key", "smtp-tls.crt", "smtp-tls.key"];
const SQLITE_HEADER = "SQLite format 3\0";

/**
 * Holds an exclusive SQLite lock on `inboxd.lock` for the life of the process. The operating
 * system drops it when the process dies (even by kill -9), so a stale lock never blocks a restart,
 * while a second live process on the same data dir is refused before it touches the queue.
 */
export function holdDataDirLock(dataDir: string): Database {
  const path = join(dataDir, "inboxd.lock");
  requireWritable(path);
  const lock = new Database(path, { create: true });
  try {
    ownerOnly(path);
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("PRAGMA locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE");
    lock.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER)");
  } catch (error) {
    lock.close();
    // Only "busy" means another process holds it; anything else is the data dir's own fault.
    if ((error as { code?: string }).code !== "SQLITE_BUSY") throw new ConfigError(`INBOXD_DATA_DIR: cannot lock ${path}: ${(error as Error).message}`);
    throw new DataDirLockedError(`another inboxd is already running on data dir ${dataDir} (its lock ${path} is held)`);
  }
  return lock;
}

/** The data dir exists (made mode 0700 if missing, whatever the umask), is a directory, and this user may write in it. */
/** `setting`: what named the directory, for the errors (INBOXD_DATA_DIR, or `db copy --to`). */
export function prepareDataDir(dataDir: string, setting = "INBOXD_DATA_DIR"): void {
  let made: string | undefined;
  try {
    made = mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (!statSync(dataDir).isDirectory()) throw new Error("it is not a directory");
  } catch (error) {
    const reason = (error as { code?: string }).code === "EEXIST" || (error as { code?: string }).code === "ENOTDIR" ? "it is not a directory" : (error as Error).message;
    throw new ConfigError(`${setting}: cannot use ${dataDir}: ${reason}`);
  }
  if (made) chmodSync(dataDir, 0o700);
  try {
    accessSync(dataDir, constants.W_OK | constants.X_OK);
  } catch {
    throw new ConfigError(`${setting}: ${dataDir} is not writable by this user`);
  }
}

/** The page cache of connections opened without INBOXD_DB_CACHE_MB (commands, tests). */
const DEFAULT_CACHE_MB = 16;

export function openDatabase(dataDir: string, options: { quickCheckWaitMs?: number; cacheMb?: number; setting?: string } = {}): OpenedDatabase {
  prepareDataDir(dataDir, options.setting);
  const lock = holdDataDirLock(dataDir);
  const path = join(dataDir, "inboxd.db");
  let sqlite: Database | undefined;
  try {
    for (const file of [path, `${path}-wal`, `${path}-shm`]) requireWritable(file);
    if (existsSync(path)) refuseForeignFile(path);
    else refuseOverInstallation(dataDir, `${path} is missing`);
    sqlite = new Database(path, { create: true, strict: true });
    // Before the first read: a checkpoint or a reader elsewhere may hold a lock for a moment.
    sqlite.exec("PRAGMA busy_timeout = 5000");
    // Before anything writes (the WAL pragma writes an empty file's header): a refused file stays as it was.
    const tables = sqlite.query<{ name: string }, []>("SELECT name FROM sqlite_schema WHERE type = 'table'").all().map((row) => row.name);
    if (tables.length === 0) refuseOverInstallation(dataDir, `${path} is empty`);
    else if (!tables.includes("schema_migrations")) throw new ConfigError(`INBOXD_DATA_DIR: ${path} is another program's SQLite database (it has no schema_migrations table): inboxd does not start over it; move it away, or restore a backup of this installation (inboxd restore FILE --force)`);
    // SQLite makes new -wal and -shm files with the database file's mode, whatever the umask.
    for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) ownerOnly(file);
    // WAL first: the other pragmas then apply to a database that readers and the writer share.
    sqlite.exec("PRAGMA journal_mode = WAL");
    // FULL: a commit is on disk before the 250/201 that follows it (never lose accepted mail).
    sqlite.exec("PRAGMA synchronous = FULL");
    sqlite.exec("PRAGMA foreign_keys = ON");
    sqlite.exec("PRAGMA temp_store = MEMORY");
    // INBOXD_DB_CACHE_MB of page cache (SQLite's default is 2 MiB): the id, inbox and queue
    // indexes a busy server reads on every message stay in memory, instead of being read again
    // from the file and looked up in the WAL. It grows as pages are read or written, large
    // messages' pages too, and stays that size: it is resident memory of the process.
    sqlite.exec(`PRAGMA cache_size = ${-1024 * (options.cacheMb ?? DEFAULT_CACHE_MB)}`);
    // The WAL file is reused after each checkpoint that empties it; past this size it is also
    // truncated then, so that one long burst of mail does not hold its disk space for good.
    sqlite.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    const unfinishedCheck = tables.length === 0 ? undefined : quickCheck(path, options.quickCheckWaitMs ?? QUICK_CHECK_WAIT_MS);
    const opened = sqlite;
    return {
      sqlite: opened,
      unfinishedCheck,
      close() {
        opened.close();
        lock.close();
      },
    };
  } catch (error) {
    sqlite?.close();
    lock.close();
    const code = (error as { code?: string }).code;
    if (code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB") throw damaged(path, (error as Error).message);
    throw error;
  }
}

/** The refusal of a damaged database: one line, pointing to the way back. */
const damaged = (path: string, finding: string) =>
  new ConfigError(`INBOXD_DATA_DIR: ${path} is damaged (${finding.replace(/\s*\n\s*/g, "; ")}): inboxd does not start on it; restore the last backup (inboxd restore FILE --force, see "Backups and upgrades" in the README)`);

/** Refuses a missing or empty database where an installation has run: starting afresh would replace its keys and lose its mail. */
function refuseOverInstallation(dataDir: string, what: string): void {
  const found = INSTALLATION_FILES.filter((name) => existsSync(join(dataDir, name)));
  if (found.length) throw new ConfigError(`INBOXD_DATA_DIR: ${what}, but ${dataDir} holds an installation that has run (${found.join(", ")}): inboxd does not start a new one over it; restore a backup (inboxd restore FILE --force), or empty the data dir to start afresh`);
}

/** A file that is not SQLite at all, refused before SQLite writes its header over the first bytes of it. */
function refuseForeignFile(path: string): void {
  const header = Buffer.alloc(SQLITE_HEADER.length);
  const fd = openSync(path, "r");
  let length: number;
  try {
    length = readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (length > 0 && header.toString("latin1", 0, length) !== SQLITE_HEADER) throw new ConfigError(`INBOXD_DATA_DIR: ${path} is not an SQLite database: inboxd does not start over it; move it away, or restore a backup of this installation (inboxd restore FILE --force)`);
}

/** A file this user may not write (made by another user, or read-only) is named, rather than failing later in SQLite's words. */
function requireWritable(path: string): void {
  try {
    accessSync(path, constants.W_OK);
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw new ConfigError(`INBOXD_DATA_DIR: ${path} is not writable by this user`);
  }
}

/** Mode 0600 for a file of the data dir that this process may have just made under a looser umask. */
function ownerOnly(path: string): void {
  if (statSync(path).mode & 0o077) chmodSync(path, 0o600);
}

/**
 * `PRAGMA quick_check` on a thread of its own, so that the start waits for it at most `waitMs`:
 * it reads every page, which took 2 s for a 1.3 GB database in the page cache and 32 s from a
 * cold disk. Damage found in time is refused here; a check that outlasts the wait goes on and
 * settles the returned promise.
 */
function quickCheck(path: string, waitMs: number): Promise<string> | undefined {
  const shared = new SharedArrayBuffer(8 + 4096);
  const worker = new Worker(workerUrl("store/sqlite/quick-check-worker.ts"));
  worker.postMessage({ path, shared } satisfies QuickCheckRequest);
  const done = new Int32Array(shared, 0, 2);
  Atomics.wait(done, 0, 0, waitMs);
  if (Atomics.load(done, 0) === 1) {
    worker.terminate();
    const finding = new TextDecoder().decode(new Uint8Array(shared, 8, done[1]));
    if (finding !== "ok") throw damaged(path, finding);
    return undefined;
  }
  // It finishes beside the server (a WAL reader neither waits for the writer nor holds it up),
  // and must not keep a process that is stopping alive.
  worker.unref();
  return new Promise((resolve) => {
    worker.onmessage = ({ data }: MessageEvent<string>) => {
      resolve(data);
      worker.terminate();
    };
    worker.onerror = (event) => resolve(`the check itself failed: ${event.message}`);
  });
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
 * A WAL that grew past RESTART_WAL_PAGES because that moment never came is emptied by RESTART
 * when the writer rests (`writerResting`), or past RESTART_BUSY_WAL_PAGES whatever it does.
 */
export function checkpointWal(sqlite: Database, writerResting: boolean): void {
  const { log } = sqlite.query<{ log: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!;
  if (log > (writerResting ? RESTART_WAL_PAGES : RESTART_BUSY_WAL_PAGES)) sqlite.query("PRAGMA wal_checkpoint(RESTART)").get();
}
