/** The database opened for reading beside a running server (`inboxd dns`, `inboxd doctor`): no lock, no writes. */
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** undefined when the data dir holds no database yet. */
export function openDatabaseReadOnly(dataDir: string): Database | undefined {
  const path = join(dataDir, "inboxd.db");
  return existsSync(path) ? new Database(path, { readonly: true, strict: true }) : undefined;
}
