import { Database } from "bun:sqlite";
import { migrations } from "../../src/store/sqlite/migrations";

/**
 * An in-memory database as inboxd left it before `version`: the migrations before it applied and
 * recorded, and an organization `org_1` with an inbox `inb_1` (a@inboxd.test) and a thread `thr_1`
 * for rows to refer to. `migrate(db, now)` then applies `version` and the rest, as an upgrade does.
 */
export function sqliteBeforeMigration(version: string): Database {
  const db = new Database(":memory:");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  for (const migration of migrations.slice(0, migrations.findIndex((m) => m.version === version))) {
    db.exec(migration.sql);
    db.query("INSERT INTO schema_migrations VALUES (?, 0)").run(migration.version);
  }
  db.exec("INSERT INTO organizations VALUES ('org_1', 'Org', 0, 0)");
  db.exec("INSERT INTO inboxes VALUES ('inb_1', 'org_1', NULL, 'a@inboxd.test', 0, 0)");
  db.exec("INSERT INTO threads VALUES ('thr_1', 'org_1', 'inb_1', 'S', 1, 5, 5, 5)");
  return db;
}
