import { Database } from "bun:sqlite";
import { join } from "node:path";

/** What SQLite throws when its file cannot grow, in a database of its own under `dir`: max_page_count stands in for a full disk. */
export function diskFullError(dir: string): Error {
  const sqlite = new Database(join(dir, "full.db"));
  try {
    sqlite.exec("CREATE TABLE t (b BLOB)");
    sqlite.exec(`PRAGMA max_page_count = ${sqlite.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count}`);
    sqlite.query("INSERT INTO t VALUES (?)").run(Buffer.alloc(64 * 1024));
  } catch (error) {
    return error as Error;
  } finally {
    sqlite.close();
  }
  throw new Error("the insert did not fail");
}
