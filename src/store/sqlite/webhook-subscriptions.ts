/**
 * Each organization's enabled webhooks and the events they take, for the fan-out of every event
 * (events.ts). Read once per organization and kept: a read per event was a third of an event's
 * cost. The one process that holds the data dir makes every write, through this store, so the
 * cache is forgotten when a webhook is written, and when a transaction or savepoint rolls back
 * (what was read inside it may never have been committed).
 */
import type { Database } from "bun:sqlite";

interface Subscriber {
  id: string;
  events: ReadonlySet<string>;
}

/** Past this many organizations the cache starts over, so that it stays small. */
const MAX_ORGANIZATIONS = 10_000;

export class WebhookSubscriptions {
  private readonly byOrganization = new Map<string, Subscriber[]>();
  private readonly read;

  constructor(sqlite: Database) {
    // In creation order, the order their deliveries are tried in: the index (organization_id,
    // created_at) ends in the rowid, which breaks ties in insertion order.
    this.read = sqlite.query<{ id: string; events: string }, [string]>("SELECT id, events FROM webhooks WHERE organization_id = ?1 AND enabled = 1 ORDER BY created_at");
  }

  of(organizationId: string): Subscriber[] {
    let subscribers = this.byOrganization.get(organizationId);
    if (!subscribers) {
      subscribers = this.read.all(organizationId).map((row) => ({ id: row.id, events: new Set(JSON.parse(row.events) as string[]) }));
      if (this.byOrganization.size >= MAX_ORGANIZATIONS) this.byOrganization.clear();
      this.byOrganization.set(organizationId, subscribers);
    }
    return subscribers;
  }

  forget() {
    this.byOrganization.clear();
  }
}
