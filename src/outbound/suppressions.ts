/** The suppression list of an organization: addresses mail is no longer sent to, and how to lift one. */
import type { App } from "../app";
import { iso } from "../clock";
import { notFound } from "../errors";
import { withTotal, type Listing, type Page } from "../page";
import { resource } from "../present";
import type { Aggregates, SuppressionRecord } from "../store";

export const presentSuppression = (row: SuppressionRecord) =>
  resource({
    id: row.id,
    organizationId: row.organizationId,
    address: row.address,
    reason: row.reason,
    detail: row.detail,
    messageId: row.messageId,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });

export type Suppression = ReturnType<typeof presentSuppression>;

/**
 * Why mail to `recipient` is not sent, as its delivery's lastResponse shows it; undefined when it
 * is not suppressed. `store`: where it is looked up (the caller's transaction, when in one).
 */
export async function suppressionRefusal(store: Aggregates, organizationId: string, recipient: string): Promise<string | undefined> {
  const suppressed = await store.suppressions.find(organizationId, recipient);
  if (!suppressed) return undefined;
  const why = suppressed.reason === "complained" ? "its owner reported mail from this organization as spam" : "it bounced before";
  return `rejected: ${recipient} is suppressed (${why}${suppressed.detail ? `: ${suppressed.detail}` : ""}); DELETE /v1/suppressions/${suppressed.id} to send to it again`;
}

export async function listSuppressions(app: App, organizationId: string, page: Page): Promise<Listing<Suppression>> {
  return withTotal(page, (await app.store.suppressions.list(organizationId, page.page, page.per)).map(presentSuppression), () => app.store.suppressions.count(organizationId));
}

/** `idOrAddress`: the suppression's id or the suppressed address itself. */
export async function getSuppression(app: App, organizationId: string, idOrAddress: string): Promise<Suppression> {
  const row = await app.store.suppressions.findByIdOrAddress(organizationId, idOrAddress);
  if (!row) throw notFound("Suppression not found");
  return presentSuppression(row);
}

/** Lifts the suppression: later sends to the address are tried again. Returns the deleted record. */
export function deleteSuppression(app: App, organizationId: string, idOrAddress: string): Promise<Suppression> {
  return app.store.transaction(async (tx) => {
    const row = await tx.suppressions.findByIdOrAddress(organizationId, idOrAddress);
    if (!row) throw notFound("Suppression not found");
    await tx.suppressions.delete(organizationId, row.id);
    return presentSuppression(row);
  });
}
