/**
 * The key that seals secrets at rest (store/secrets.ts): INBOXD_SECRET_KEY when set, else the data
 * dir's `secret.key`, made at the first start. Either way it is not in the database, so a copy of
 * the database file alone does not give the secrets away.
 */
import type { Database } from "bun:sqlite";
import { closeSync, existsSync, fchmodSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { ConfigError, type Config } from "../../config";
import { opensProbe, parseSecretKey, SECRET_KEY_BYTES, secretBox, type SecretBox } from "../secret-box";
import { sealedProbe } from "./secrets";

export const secretKeyFile = (dataDir: string) => join(dataDir, "secret.key");

/** The key of a key file; a file that holds none is the operator's to look at, not to be replaced. */
export function readSecretKeyFile(path: string): Buffer {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    // A start that cannot read its key fails the same way every time: exit 2, not restarted (a key
    // copied in as root, mode 0600, is unreadable by the service's user).
    throw new ConfigError(`${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): the key file must be readable by the user inboxd runs as`);
  }
  const key = parseSecretKey(text);
  if (!key) throw new ConfigError(`${path} does not hold a secret key (${SECRET_KEY_BYTES} bytes in base64 or hex)`);
  return key;
}

/**
 * Written to a temporary name and renamed, mode 0600 whatever the umask, and on disk, directory
 * entry included, before anything is sealed with it: secrets sealed with a key lost in a crash
 * would be lost with it.
 */
export function writeSecretKeyFile(path: string, key: Buffer): void {
  const staging = `${path}.tmp`;
  const fd = openSync(staging, "w", 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, `${key.toString("base64")}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(staging, path);
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/**
 * The box for this start, after checking that its key opens the secrets already sealed in the
 * database. Called before the migrations: a start refused for its key writes nothing to the
 * database, so the version before an upgrade still opens it. A database whose secrets are sealed
 * never gets a new key: without the one they were sealed with, the start is refused. Then, once
 * migrated, sealStoredSecrets seals what is still stored in the clear.
 */
export function openSecretBox(config: Pick<Config, "dataDir" | "secretKey">, sqlite: Database): SecretBox {
  const path = secretKeyFile(config.dataDir);
  const database = join(config.dataDir, "inboxd.db");
  const probe = sealedProbe(sqlite);
  let key = config.secretKey;
  if (!key && existsSync(path)) key = readSecretKeyFile(path);
  if (!key) {
    if (probe) throw new ConfigError(`INBOXD_DATA_DIR: the secrets in ${database} are sealed, but the key file ${path} is missing: put it back (a backup's is beside it, as FILE.key), or set INBOXD_SECRET_KEY`);
    key = randomBytes(SECRET_KEY_BYTES);
    writeSecretKeyFile(path, key);
  }
  const box = secretBox(key);
  if (probe && !opensProbe(box, probe)) {
    if (config.secretKey) throw new ConfigError(`INBOXD_SECRET_KEY: this key does not open the secrets in ${database}, which were sealed with another key: set the key this database was used with`);
    throw new ConfigError(`INBOXD_DATA_DIR: ${path} does not open the secrets in ${database}, which were sealed with another key: put back the key file this database was used with (a backup's is beside it, as FILE.key), or set INBOXD_SECRET_KEY`);
  }
  return box;
}
