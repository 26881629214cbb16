/** A database a newer inboxd migrated: this version would write into a schema it does not know. */
import { ConfigError } from "../config";

/** Throws, naming `where` (the setting, or a backup's path), when the database holds migrations this version does not have. */
export function refuseNewerSchema(applied: Iterable<string>, known: readonly { version: string }[], where: string): void {
  const versions = new Set(known.map((migration) => migration.version));
  const unknown = [...applied].filter((version) => !versions.has(version)).sort();
  if (unknown.length === 0) return;
  throw new ConfigError(`${where}: the database was migrated by a newer inboxd (${unknown.join(", ")}, unknown to this version): run that version, or restore a backup this version made`);
}
