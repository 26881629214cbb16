/**
 * The outbound queue across an organization's inboxes: each remote recipient's delivery with the
 * message it belongs to, newest first, narrowed by status, recipient domain or sending inbox.
 */
import type { App } from "../app";
import { iso } from "../clock";
import { normalizeDomainName } from "../domains/name";
import { invalid } from "../errors";
import { requireInbox } from "../inboxes/service";
import { presentDelivery } from "../messages/present";
import { lookedAhead, mapListing, type Listing, type Page } from "../page";
import { resource } from "../present";
import type { DeliveryFilter, OutboundDeliveryRecord } from "../store";

export const presentOutboundDelivery = (row: OutboundDeliveryRecord, retryDelays: readonly number[]) =>
  resource({
    id: row.id,
    messageId: row.messageId,
    inboxId: row.inboxId,
    threadId: row.threadId,
    subject: row.subject,
    from: row.from,
    fromName: row.fromName,
    domain: row.domain,
    ...presentDelivery(row, retryDelays),
    createdAt: iso(row.createdAt),
  });

export type OutboundDelivery = ReturnType<typeof presentOutboundDelivery>;

/**
 * A page without a total, as the message list: the page reads one row more than it shows, which
 * says whether another follows. An unknown inbox, or another organization's, is 404.
 */
export async function listDeliveries(app: App, organizationId: string, filter: DeliveryFilter, page: Page): Promise<Listing<OutboundDelivery>> {
  if (filter.inboxId !== undefined) await requireInbox(app.store, organizationId, filter.inboxId);
  const rows = await app.store.deliveries.list(organizationId, { ...filter, domain: filter.domain === undefined ? undefined : recipientDomain(filter.domain) }, page.page, page.per, 1);
  return mapListing(lookedAhead(page, rows), (row) => presentOutboundDelivery(row, app.config.deliveryRetryDelays));
}

/** The filter's domain as deliveries store theirs (lower-case A-labels, no root dot): `bücher.test.` finds xn--bcher-kva.test. */
function recipientDomain(input: string): string {
  const domain = normalizeDomainName(input);
  if (!domain) throw invalid(`domain: ${JSON.stringify(input)} is not a domain name`);
  return domain;
}
