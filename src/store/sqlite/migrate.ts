/** Applies the embedded migrations that are not yet applied, all in one transaction; refuses a database a newer inboxd migrated. */
import type { Database } from "bun:sqlite";
import { refuseNewerSchema } from "../newer-schema";
import { migrations } from "./migrations";

export function migrate(sqlite: Database, now: number): string[] {
  sqlite.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const applied = new Set(sqlite.query<{ version: string }, []>("SELECT version FROM schema_migrations").all().map((r) => r.version));
  refuseNewerSchema(applied, migrations, "INBOXD_DATA_DIR");
  const pending = migrations.filter((m) => !applied.has(m.version));
  sqlite.transaction(() => {
    for (const m of pending) {
      sqlite.exec(m.sql);
      sqlite.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(m.version, now);
    }
  }).immediate();
  return pending.map((m) => m.version);
}
