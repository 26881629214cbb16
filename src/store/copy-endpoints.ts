/**
 * Where `inboxd db copy` reads and writes: this installation's database (the engine its settings
 * select), and the target named on the command line (`postgres://…` or `sqlite:DATA_DIR`).
 */
import { existsSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError, withoutPassword, type Config } from "../config";
import type { CopyEndpoint } from "./copy";
import { postgresCopyEndpoint } from "./postgres/copy";
import { sqliteCopyEndpoint } from "./sqlite/copy";
import { readSecretKeyFile, secretKeyFile, writeSecretKeyFile } from "./sqlite/secret-key";

export type CopyTarget = { engine: "sqlite"; dataDir: string } | { engine: "postgres"; url: string };

export function parseCopyTarget(target: string | undefined): CopyTarget {
  if (!target) throw new ConfigError("db copy: name the target (--to postgres://user:password@host:port/database or --to sqlite:DATA_DIR)");
  if (/^postgres(ql)?:\/\//.test(target)) return { engine: "postgres", url: target };
  if (target.startsWith("sqlite:") && target.length > "sqlite:".length) return { engine: "sqlite", dataDir: resolve(target.slice("sqlite:".length)) };
  throw new ConfigError(`db copy: --to ${withoutPassword(target)}: expected postgres://… or sqlite:DATA_DIR`);
}

export async function sourceEndpoint(config: Config, now: number): Promise<CopyEndpoint> {
  return config.databaseUrl ? postgresCopyEndpoint(config.databaseUrl, now, "INBOXD_DATABASE_URL") : sqliteCopyEndpoint(config.dataDir, now);
}

/** Whether two paths name one directory: a symbolic link to a directory is that directory. */
const samePath = (a: string, b: string) => (existsSync(a) && existsSync(b) ? realpathSync(a) === realpathSync(b) : resolve(a) === resolve(b));

export async function targetEndpoint(config: Config, target: CopyTarget, now: number): Promise<CopyEndpoint> {
  if (target.engine === "postgres") return postgresCopyEndpoint(target.url, now, "db copy --to");
  // Its lock is the source's, already held by this command: "another inboxd is running" would mislead.
  if (!config.databaseUrl && samePath(target.dataDir, config.dataDir)) throw new ConfigError(`db copy: --to sqlite:${target.dataDir} is this installation's own data dir: name a new one`);
  return sqliteCopyEndpoint(target.dataDir, now, "db copy --to");
}

/**
 * The copied secrets stay sealed with this installation's key: a SQLite target gets the key file
 * beside its database (unless INBOXD_SECRET_KEY is set, which then opens both); what the operator
 * must do is returned, to be said.
 */
export function carryOverSecretKey(config: Config, target: CopyTarget): string {
  if (config.secretKey) return "the copied secrets are sealed with INBOXD_SECRET_KEY: set the same INBOXD_SECRET_KEY wherever the copy runs";
  const sourceKey = secretKeyFile(config.dataDir);
  if (!existsSync(sourceKey)) return "";
  if (target.engine === "postgres") return `the copied secrets are sealed with the key in ${sourceKey}: set INBOXD_SECRET_KEY to its content on every node`;
  const targetKey = secretKeyFile(target.dataDir);
  if (!existsSync(targetKey)) writeSecretKeyFile(targetKey, readSecretKeyFile(sourceKey));
  return `the copied secrets are sealed with the key now also in ${targetKey}`;
}
