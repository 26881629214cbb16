/**
 * Applies the embedded migrations that are not yet applied, all in one transaction, under an
 * advisory lock: nodes that start together wait for the first, then find nothing left to apply.
 * PostgreSQL's DDL is transactional, so a failed migration leaves the database as it was. A
 * database a newer inboxd migrated is refused.
 */
import type { SQL as BunSql } from "bun";
import { refuseNewerSchema } from "../newer-schema";
import { migrations } from "./migrations";

/** pg_advisory_xact_lock's key for the migrations (any constant of our own: "inboxd" in ASCII). */
const MIGRATION_LOCK = 0x696e626f7864;

export async function migrate(client: BunSql, now: number): Promise<string[]> {
  return client.begin(async (tx) => {
    // A migration may rewrite a large table: the pool's statement deadline (./connection.ts) does not apply to it.
    await tx.unsafe("SET LOCAL statement_timeout = 0");
    await tx.unsafe("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await tx.unsafe("CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at bigint NOT NULL)");
    const applied = new Set(((await tx.unsafe("SELECT version FROM schema_migrations")) as { version: string }[]).map((row) => row.version));
    refuseNewerSchema(applied, migrations, "INBOXD_DATABASE_URL");
    const pending = migrations.filter((m) => !applied.has(m.version));
    for (const m of pending) {
      // Without parameters the driver sends the file as one simple query: every statement in it runs.
      await tx.unsafe(m.sql);
      await tx.unsafe("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)", [m.version, now]);
    }
    return pending.map((m) => m.version);
  });
}
