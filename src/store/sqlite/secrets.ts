/** The sealing of secrets as the embedded engine stores them (the box itself: ../secret-box.ts). */
import type { Database } from "bun:sqlite";
import { PROBE, SEALED_PREFIX, type SecretBox } from "../secret-box";

/** The sealed probe of a database, undefined while its secrets were never sealed (before migration 0090 ran at a start, or before 0090 at all). */
export function sealedProbe(sqlite: Database): string | undefined {
  const hasTable = sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'secret_box'").get() !== null;
  return hasTable ? sqlite.query<{ probe: string }, []>("SELECT probe FROM secret_box WHERE id = 1").get()?.probe : undefined;
}

/** Every column that holds a secret, by table. */
const SECRET_COLUMNS = [
  ["dkim_keys", "private_key_pem"],
  ["webhooks", "secret"],
] as const;

/**
 * Seals every secret still stored in the clear, in one transaction: all of them at the first start
 * with this key (an installation from before secrets were sealed), and any that an older inboxd
 * wrote since. The caller has checked the probe, if any, with `opensProbe`. Returns how many it sealed.
 */
export function sealStoredSecrets(sqlite: Database, box: SecretBox, now: number): number {
  return sqlite
    .transaction(() => {
      let sealed = 0;
      for (const [table, column] of SECRET_COLUMNS) {
        const clear = sqlite.query<{ id: string; value: string }, [string]>(`SELECT id, ${column} AS value FROM ${table} WHERE substr(${column}, 1, length(?1)) <> ?1`).all(SEALED_PREFIX);
        const seal = sqlite.query<never, [string, string]>(`UPDATE ${table} SET ${column} = ?2 WHERE id = ?1`);
        for (const { id, value } of clear) seal.run(id, box.seal(value));
        sealed += clear.length;
      }
      sqlite.query("INSERT OR IGNORE INTO secret_box (id, probe, sealed_at) VALUES (1, ?1, ?2)").run(box.seal(PROBE), now);
      return sealed;
    })
    .immediate();
}
