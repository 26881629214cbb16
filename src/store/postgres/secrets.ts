/**
 * The key that seals secrets at rest (../secret-box.ts) on PostgreSQL: INBOXD_SECRET_KEY, else
 * the data dir's `secret.key` as on the embedded engine (../sqlite/secret-key.ts). Every node of
 * one database must hold the same key: the database keeps the sealed probe, and a node whose key
 * does not open it is refused at start. Nodes that start together check under the migrations'
 * lock, so the first one's key is the one.
 */
import { existsSync, mkdirSync } from "node:fs";
import { randomBytes } from "node:crypto";
import type { SQL as BunSql } from "bun";
import { ConfigError, type Config } from "../../config";
import { opensProbe, PROBE, SECRET_KEY_BYTES, secretBox, type SecretBox } from "../secret-box";
import { readSecretKeyFile, secretKeyFile, writeSecretKeyFile } from "../sqlite/secret-key";

const SECRETS_LOCK = 0x696e626f7865;

/** Whether the database has its secrets' table yet: a new one has it once migrated. */
export async function hasSecretBox(client: BunSql): Promise<boolean> {
  const [row] = (await client.unsafe("SELECT to_regclass('secret_box') IS NOT NULL AS present")) as { present: boolean }[];
  return row?.present === true;
}

export async function openSecrets(config: Pick<Config, "dataDir" | "secretKey">, client: BunSql, now: number): Promise<SecretBox> {
  return client.begin(async (tx) => {
    await tx.unsafe("SELECT pg_advisory_xact_lock($1)", [SECRETS_LOCK]);
    const [stored] = (await tx.unsafe("SELECT probe FROM secret_box WHERE id = 1")) as { probe: string }[];
    const path = secretKeyFile(config.dataDir);
    let key = config.secretKey;
    if (!key && existsSync(path)) key = readSecretKeyFile(path);
    if (!key) {
      if (stored) throw new ConfigError(`INBOXD_SECRET_KEY: the secrets in the database are sealed with a key this node does not have: set INBOXD_SECRET_KEY to the key of the other nodes`);
      key = randomBytes(SECRET_KEY_BYTES);
      mkdirSync(config.dataDir, { recursive: true });
      writeSecretKeyFile(path, key);
    }
    const box = secretBox(key);
    if (!stored) await tx.unsafe("INSERT INTO secret_box (id, probe, sealed_at) VALUES (1, $1, $2)", [box.seal(PROBE), now]);
    else if (!opensProbe(box, stored.probe)) {
      throw new ConfigError(`${config.secretKey ? "INBOXD_SECRET_KEY" : path}: this key does not open the secrets in the database, which were sealed with another key: set INBOXD_SECRET_KEY to the key the database was used with`);
    }
    return box;
  });
}
