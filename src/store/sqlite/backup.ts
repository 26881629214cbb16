/**
 * `inboxd backup` and `inboxd restore`: a consistent copy of the database while the server runs,
 * and putting one back into a stopped installation. SQLite's `VACUUM INTO` writes the copy from
 * one read transaction, compacted, with no WAL beside it; bun:sqlite has no online-backup API.
 */
import { Database } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ConfigError } from "../../config";
import { workerUrl } from "../../workers/url";
import { opensProbe, secretBox } from "../secret-box";
import { refuseNewerSchema } from "../newer-schema";
import { migrations as knownMigrations } from "./migrations";
import { sealedProbe } from "./secrets";
import { DataDirLockedError, holdDataDirLock, prepareDataDir } from "./open";
import { readSecretKeyFile, secretKeyFile, writeSecretKeyFile } from "./secret-key";

export type BackupRequest = { source: string; target: string };
export type BackupReply = { done: true } | { error: string };

const PROGRESS_EVERY_MS = 200;

export const databasePath = (dataDir: string) => join(dataDir, "inboxd.db");
const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0);

/**
 * Copies the data dir's database to `target` (which must not exist yet); `onProgress` hears the
 * bytes written so far against the live database's size (an upper bound: the copy is compacted).
 * The copy is written as `target.partial` and takes its name once whole and on disk, its key file
 * before it: a backup cut off (killed, the disk full) leaves no file that looks like one. Returns
 * `keyFile`, the key written beside the copy, and `keyNotGiven`: its secrets are sealed, and this
 * command had neither the data dir's key file nor INBOXD_SECRET_KEY (an installation that runs
 * with the setting, backed up by hand without it): the copy is made, and the operator told.
 */
/**
 * `secretKey`: INBOXD_SECRET_KEY, if set. `opensWithSecretKey`: it opens the copy's secrets (a
 * key that does not, given by hand, was said to: the backup then could not be restored with it).
 */
export async function backupDatabase(
  dataDir: string,
  target: string,
  onProgress: (written: number, estimate: number) => void,
  options: { secretKey?: Buffer },
): Promise<{ bytes: number; keyFile?: string; opensWithSecretKey: boolean; keyNotGiven: boolean }> {
  const source = databasePath(dataDir);
  if (!existsSync(source)) throw new ConfigError(`INBOXD_DATA_DIR: no database at ${source}`);
  // The copy's secrets open only with the key that sealed them: the key file goes beside it, so a
  // restore elsewhere (the data dir lost with its key) still works. With an INBOXD_SECRET_KEY that
  // opens them, the key is the operator's to keep, and the data dir's file, if any, is not in use.
  const probe = sealedProbeOf(source);
  const opensWithSecretKey = options.secretKey !== undefined && (probe === undefined || opensProbe(secretBox(options.secretKey), probe));
  const keyFile = !opensWithSecretKey && existsSync(secretKeyFile(dataDir)) ? backupKeyFile(target) : undefined;
  for (const file of [target, keyFile]) if (file && existsSync(file)) throw new ConfigError(`${file} exists already: choose a new file name`);
  const partial = partialFile(target);
  // Made empty first, mode 0600 whatever the umask (the copy holds everything), which VACUUM INTO
  // accepts; "wx" also refuses a file that exists: another backup to the same name under way.
  createEmpty(partial);
  const estimate = sizeOf(source) + sizeOf(`${source}-wal`);
  const worker = new Worker(workerUrl("store/sqlite/backup-worker.ts"));
  const timer = setInterval(() => onProgress(sizeOf(partial), estimate), PROGRESS_EVERY_MS);
  try {
    const reply = await new Promise<BackupReply>((resolve) => {
      worker.onmessage = ({ data }: MessageEvent<BackupReply>) => resolve(data);
      worker.onerror = (event) => resolve({ error: event.message });
      // A thread that exits without a word fails the backup; after its reply, this changes nothing.
      worker.addEventListener("close", () => resolve({ error: "the backup thread exited" }));
      worker.postMessage({ source, target: partial } satisfies BackupRequest);
    });
    if ("error" in reply) throw new Error(`backup failed: ${reply.error}`);
    syncFile(partial);
    if (keyFile) installNew(keyFile, readFileSync(secretKeyFile(dataDir)));
    // link, not rename: a file made under the name meanwhile is not replaced.
    linkSync(partial, target);
    syncFile(dirname(target));
  } finally {
    clearInterval(timer);
    worker.terminate();
    for (const file of [partial, `${partial}-journal`]) rmSync(file, { force: true });
  }
  const bytes = sizeOf(target);
  onProgress(bytes, bytes);
  return { bytes, keyFile, opensWithSecretKey, keyNotGiven: !opensWithSecretKey && !keyFile && sealedProbeOf(target) !== undefined };
}

function sealedProbeOf(path: string): string | undefined {
  const sqlite = new Database(path, { readonly: true });
  try {
    return sealedProbe(sqlite);
  } finally {
    sqlite.close();
  }
}

/** Where `inboxd backup FILE` puts the key of FILE's secrets, and where `inboxd restore FILE` looks for it. */
export const backupKeyFile = (backup: string) => `${backup}.key`;

/** Where `inboxd backup FILE` writes the copy until it is whole. */
export const partialFile = (backup: string) => `${backup}.partial`;

/** Writes `content` as a new file, mode 0600, on disk under its name before this returns. */
function installNew(path: string, content: Buffer): void {
  const partial = partialFile(path);
  createEmpty(partial);
  try {
    writeFileSync(partial, content);
    syncFile(partial);
    linkSync(partial, path);
  } finally {
    rmSync(partial, { force: true });
  }
}

/** A new empty partial file, mode 0600 whatever the umask; refused when it exists (a backup to that name did not finish). */
function createEmpty(path: string): void {
  try {
    closeSync(openSync(path, "wx", 0o600));
  } catch (error) {
    throw new ConfigError(
      (error as { code?: string }).code === "EEXIST"
        ? `${path} exists already, left by a backup that did not finish: remove it (and ${path}-journal, if there), or choose a new file name`
        : `cannot write ${path}: ${(error as Error).message}`,
    );
  }
  chmodSync(path, 0o600);
}

/** What a file holds, checked before it may replace an installation's database; `probe` when its secrets are sealed. */
export function describeBackup(path: string): { migrations: number; messages: number; probe?: string } {
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
    const applied = sqlite.query<{ version: string }, []>("SELECT version FROM schema_migrations").all().map(({ version }) => version);
    // Put in place, it would stop every start of this version: refused before anything is replaced.
    refuseNewerSchema(applied, knownMigrations, path);
    const migrations = applied.length;
    const messages = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n;
    return { migrations, messages, probe: sealedProbe(sqlite) };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`${path}: not a usable inboxd database (${(error as Error).message})`);
  } finally {
    sqlite.close();
  }
}

/**
 * Puts a backup in place of the data dir's database. Only while no inboxd runs on the data dir
 * (its lock is taken for the while), and over an existing database only with `force`. A backup
 * whose secrets are sealed needs the key that opens them: INBOXD_SECRET_KEY (`secretKey`), else
 * the key file beside it, which becomes the data dir's; checked before anything is replaced.
 */
export function restoreDatabase(dataDir: string, backup: string, force: boolean, secretKey?: Buffer): { messages: number; keyFile?: string } {
  const { messages, probe } = describeBackup(backup);
  const keyFile = backupKeyFile(backup);
  const installKey = probe && !secretKey ? restoredKey(backup, probe) : undefined;
  if (probe && secretKey && !opensProbe(secretBox(secretKey), probe)) throw new ConfigError(`INBOXD_SECRET_KEY: this key does not open the secrets in ${backup}, which were sealed with another key: set the key it was made with`);
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
    const dataKey = secretKeyFile(dataDir);
    if (installKey && existsSync(dataKey) && !force && !readSecretKeyFile(dataKey).equals(installKey)) throw new ConfigError(`${dataKey} exists and holds another key than ${keyFile}: add --force to replace it`);
    // The copy first: one that fails (a full disk) leaves the installation as it was, its key
    // included, which alone opens its database's secrets. The key then, right before the swap: a
    // crash between the two leaves a database and a key that do not match, which the start
    // refuses, and the same restore again mends it.
    const staging = restoringFile(target);
    stageCopy(backup, staging);
    if (installKey) writeSecretKeyFile(dataKey, installKey);
    // The old WAL belongs to the old database: left beside the new one, SQLite would replay it.
    for (const suffix of ["-wal", "-shm"]) rmSync(`${target}${suffix}`, { force: true });
    renameSync(staging, target);
    syncFile(dataDir);
    return { messages, keyFile: installKey ? keyFile : undefined };
  } finally {
    lock.close();
  }
}

/**
 * The backup as SQLite reads it, its WAL included, written to `staging` and synced. A copy of a
 * running data dir (`cp -a`) holds its newest commits in `inboxd.db-wal` beside the file: a copy
 * of the file alone dropped mail that had been acknowledged, while the count said (read through
 * the WAL) included it. A copy that fails (a full disk) is removed, leaving the disk as it was.
 */
function stageCopy(backup: string, staging: string): void {
  const removeStaging = () => removeRestoring(staging);
  removeStaging();
  // Made empty at 0600 before VACUUM INTO fills it: made by the copy, it was 0644 (the umask's)
  // while it was written, and stayed so when a restore was killed meanwhile.
  createEmpty(staging);
  const sqlite = new Database(backup, { readonly: true });
  try {
    sqlite.query("VACUUM INTO ?1").run(staging);
    syncFile(staging);
  } catch (error) {
    removeStaging();
    throw new Error(`cannot copy ${backup} to ${staging} (${(error as Error).message}): nothing was replaced`);
  } finally {
    sqlite.close();
  }
}

/** Where a restore stages its copy of the backup, beside the database it replaces. */
export const restoringFile = (database: string) => `${database}.restoring`;

/**
 * A restore's staging copy and its rollback journal (VACUUM INTO writes the copy as a database of
 * its own), the files only: anything else under the name is not a restore's; true when there was a copy.
 */
export function removeRestoring(staging: string): boolean {
  const [copy, journal] = [staging, `${staging}-journal`].map((path) => ({ path, isFile: statSync(path, { throwIfNoEntry: false })?.isFile() === true }));
  for (const file of [copy!, journal!]) if (file.isFile) rmSync(file.path);
  return copy!.isFile;
}

/** The key file beside a backup, once it is known to open the backup's secrets. */
function restoredKey(backup: string, probe: string): Buffer {
  const keyFile = backupKeyFile(backup);
  if (!existsSync(keyFile)) throw new ConfigError(`${backup}: its secrets are sealed, and its key file ${keyFile} is missing: put back the one \`inboxd backup\` wrote beside it, or set INBOXD_SECRET_KEY to the key it was made with`);
  const key = readSecretKeyFile(keyFile);
  if (!opensProbe(secretBox(key), probe)) throw new ConfigError(`${backup}: ${keyFile} does not open its secrets, which were sealed with another key`);
  return key;
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
