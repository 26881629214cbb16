/**
 * Claims of queue rows when several nodes work one database. A node claims due rows with
 * `SELECT … FOR UPDATE SKIP LOCKED` in its turn's transaction, so that two nodes never claim the
 * same row, and its claim writes a lease beside the row's retry time: `claimed_by` (this run of
 * this node) and `lease_until`. While the try is under way the node renews the lease; once its
 * outcome is recorded, or the claim given back, the row is free again. A row is due for other
 * nodes when its retry time has come and it is free or its lease ran out: a node that dies stops
 * renewing, and the others take its rows over after the lease, at their retry time (a crash never
 * makes a hot loop).
 *
 * The embedded engine's "what the last run claimed is due again at start" (one process per data
 * dir) becomes "what the earlier runs of this node claimed": a node's name is stable across its
 * restarts (nodeName), each run adds its own suffix, and a start frees the claims of the
 * earlier runs of its name only, never those of other nodes, which are alive or whose leases run out.
 */
import { hostname } from "node:os";
import { resolve } from "node:path";
import { sql, type SQL } from "drizzle-orm";
import type { Clock } from "../../clock";
import type { Config } from "../../config";
import { randomToken } from "../../ids";
import type { Logger } from "../../log";
import { runEvery, type RunningPart } from "../../running-part";
import { likePrefix, type PgDb } from "./db";

/**
 * How long a claim holds its row without being renewed: a node that dies gives up its rows this
 * long after its last renewal. Renewed three times per lease, so that one late renewal (a busy
 * event loop, a slow commit) never lets a live node's claim lapse.
 */
export const LEASE_MS = 30_000;
const RENEW_EVERY_MS = LEASE_MS / 3;

/** The queue tables whose claims carry a lease (migrations/postgres/0002_delivery.sql). */
const LEASED_TABLES = ["deliveries", "webhook_deliveries", "accepted_inbound", "drafts"] as const;

export interface Leases {
  /** This run of this node, as `claimed_by` names it. */
  holder: string;
  /** When a lease taken or renewed now runs out. */
  until(): number;
}

/**
 * A node's name as leases know it, the same across restarts: its INBOXD_HOSTNAME (each node's
 * own, as its MX name), the machine's host name and the data dir. The machine's name and the
 * path alone were the same on two cloned machines or containers with the documented
 * /var/lib/inboxd: the second node's start freed the first's live claims as its own earlier run's,
 * and their messages went out twice.
 */
export const nodeName = (config: Pick<Config, "hostname" | "dataDir">) => `${config.hostname}@${hostname()}:${resolve(config.dataDir)}`;

/** `node`: the node's stable name (nodeName); each run of it holds its claims under a name of its own. */
export function leasesOf(clock: Clock, node = `${hostname()}:${randomToken(4)}`): Leases {
  return { holder: `${node}#${randomToken(4)}`, until: () => clock.now() + LEASE_MS };
}

/** The rows no node holds at `now`: never claimed, given back, or whose lease ran out (`alias`: the table's name in the query). */
export const unheld = (now: number, alias?: string): SQL => {
  const prefix = alias ? `${alias}.` : "";
  return sql`(${sql.raw(`${prefix}claimed_by`)} IS NULL OR ${sql.raw(`${prefix}lease_until`)} <= ${now})`;
};

/**
 * Renews the leases this run holds. Rows locked by a turn in progress are skipped (their turn
 * writes them anyway), so renewal never waits for a turn nor deadlocks with it.
 */
export async function renewLeases(db: PgDb, leases: Leases): Promise<void> {
  const until = leases.until();
  for (const table of LEASED_TABLES) {
    await db.execute(sql`
      UPDATE ${sql.identifier(table)} SET lease_until = ${until}
      WHERE id IN (SELECT id FROM ${sql.identifier(table)} WHERE claimed_by = ${leases.holder} AND lease_until < ${until} FOR UPDATE SKIP LOCKED)`);
  }
  // The idempotency keys of this run's requests in progress (./idempotency-keys.ts); a key its
  // request holds locked in a long transaction is skipped too, rather than waited for.
  await db.execute(sql`
    UPDATE idempotency_keys SET lease_until = ${until}
    WHERE (organization_id, idempotency_key) IN (
      SELECT organization_id, idempotency_key FROM idempotency_keys
      WHERE held_by = ${leases.holder} AND status_code IS NULL AND lease_until < ${until} FOR UPDATE SKIP LOCKED)`);
}

/**
 * At start: the claims of this node's earlier runs (a crash, or a stop that could not wait) are
 * free at once rather than when their leases run out, due at their retry time as on the embedded
 * engine; an accepted message is due now, as the inbound queue's resume makes it there. Returns
 * how many were freed.
 */
export async function releaseEarlierRuns(db: PgDb, leases: Leases, now: number): Promise<number> {
  const earlier = heldByEarlierRuns(leases, "claimed_by");
  let freed = 0;
  for (const table of LEASED_TABLES) {
    const due = table === "accepted_inbound" ? sql`, next_attempt_at = least(next_attempt_at, ${now})` : sql``;
    const rows = await db.execute(sql`UPDATE ${sql.identifier(table)} SET claimed_by = NULL, lease_until = NULL ${due} WHERE ${earlier} RETURNING id`);
    freed += (rows as unknown as unknown[]).length;
  }
  return freed;
}

/** Whether `column` names an earlier run of this node (not this run, nor another node). */
export function heldByEarlierRuns(leases: Leases, column: string): SQL {
  const node = leases.holder.slice(0, leases.holder.lastIndexOf("#") + 1);
  return sql`${sql.raw(column)} LIKE ${likePrefix(node)} AND ${sql.raw(column)} <> ${leases.holder}`;
}

/** Renews this run's leases every RENEW_EVERY_MS while the server runs. */
export function startLeaseRenewal(db: PgDb, leases: Leases, log: Logger): RunningPart {
  return runEvery("queue-leases", RENEW_EVERY_MS, () => renewLeases(db, leases), { log, event: "renewing this node's queue claims failed; other nodes take them over should it go on failing" });
}
