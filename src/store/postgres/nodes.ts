/**
 * The nodes of one database agree on the service's mail domain. Each node accepts mail for the
 * inboxes on its INBOXD_MAIL_DOMAIN (and on the custom domains) and refuses the rest with 550:
 * a node started with another domain than the others would bounce, for good, the mail of every
 * inbox on theirs that reached it. So a node joins by its row in `nodes`, renewed while it runs,
 * and does not start while another node seen alive serves another domain. To change the domain,
 * every node stops (a stopped node's row goes with it; a node that died counts until its row is
 * older than a lease), then each starts with the new one.
 */
import { and, desc, eq, gt, lt, ne, sql } from "drizzle-orm";
import type { Clock } from "../../clock";
import { ConfigError } from "../../config";
import type { Logger } from "../../log";
import { runEvery, type RunningPart } from "../../running-part";
import type { PgDb } from "./db";
import { LEASE_MS } from "./leases";
import { nodes } from "./schema";

export interface Node {
  /** nodeName: the same across the node's restarts. */
  name: string;
  mailDomain: string;
}

/** Rows of nodes not seen for this long are removed as a node joins: machines long gone. */
const FORGOTTEN_AFTER_MS = 24 * 60 * 60 * 1000;

/** Refuses the start (ConfigError) while another live node serves another mail domain; else records this node. */
export async function joinNodes(db: PgDb, node: Node, now: number): Promise<void> {
  await db.transaction(async (tx) => {
    // Two nodes starting at once with different domains see each other: one waits for the other's row.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext('inboxd.nodes'))`);
    await tx.delete(nodes).where(lt(nodes.seenAt, now - FORGOTTEN_AFTER_MS));
    const [other] = await tx
      .select()
      .from(nodes)
      .where(and(ne(nodes.name, node.name), ne(nodes.mailDomain, node.mailDomain), gt(nodes.seenAt, now - LEASE_MS)))
      .orderBy(desc(nodes.seenAt))
      .limit(1);
    if (other) {
      const secondsAgo = Math.max(0, Math.round((now - other.seenAt) / 1000));
      throw new ConfigError(
        `INBOXD_MAIL_DOMAIN: another node of this database, ${other.name} (seen ${secondsAgo} s ago), serves ${other.mailDomain}, this one ${node.mailDomain}: each would refuse the mail of the other's inboxes (550). Give every node the same INBOXD_MAIL_DOMAIN; to change it, stop every node, then start them with the new one (a node that stopped without its clean stop counts for ${LEASE_MS / 1000} s after it was last seen)`,
      );
    }
    const row = { name: node.name, mailDomain: node.mailDomain, seenAt: now };
    await tx.insert(nodes).values(row).onConflictDoUpdate({ target: nodes.name, set: { mailDomain: row.mailDomain, seenAt: row.seenAt } });
  });
}

/** Renews the node's row as often as its queue leases while the server runs; its stop removes the row. */
export function stayJoined(db: PgDb, node: Node, clock: Clock, log: Logger): RunningPart {
  const ofThisNode = eq(nodes.name, node.name);
  const renewal = runEvery("node-membership", LEASE_MS / 3, async () => void (await db.update(nodes).set({ seenAt: clock.now() }).where(ofThisNode)), {
    log,
    event: "renewing this node's row in the nodes table failed; a node started meanwhile with another INBOXD_MAIL_DOMAIN is not refused",
  });
  return {
    name: "node-membership",
    async stop() {
      await renewal.stop();
      await db
        .delete(nodes)
        .where(ofThisNode)
        .catch((error: unknown) => log.warn("leaving the nodes table failed; this node counts as alive until its row is old", { error: (error as Error).message }));
    },
  };
}
