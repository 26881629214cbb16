/** The database opened for reading beside a running server (`inboxd dns`, `inboxd doctor`): no lock, no writes. */
import { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { join } from "node:path";

/** undefined when the data dir holds no database yet; one this user may not read is an error, not "none". */
export function openDatabaseReadOnly(dataDir: string): Database | undefined {
  const path = join(dataDir, "inboxd.db");
  try {
    statSync(path);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return undefined;
    throw error;
  }
  return new Database(path, { readonly: true, strict: true });
}
