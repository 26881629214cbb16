/** The suppression list of an organization: addresses mail is no longer sent to, and how to lift one. */
import type { App } from "../app";
import { iso } from "../clock";
import { notFound } from "../errors";
import type { Page } from "../http/pagination";
import { resource } from "../present";
import type { SuppressionRow } from "../store/sqlite/suppressions";

export const presentSuppression = (row: SuppressionRow) =>
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

/** Why mail to `recipient` is not sent, as its delivery's lastResponse shows it; undefined when it is not suppressed. */
export function suppressionRefusal(app: App, organizationId: string, recipient: string): string | undefined {
  const suppressed = app.store.suppressions.find(organizationId, recipient);
  if (!suppressed) return undefined;
  const why = suppressed.reason === "complained" ? "its owner reported mail from this organization as spam" : "it bounced before";
  return `rejected: ${recipient} is suppressed (${why}${suppressed.detail ? `: ${suppressed.detail}` : ""}); DELETE /v1/suppressions/${suppressed.id} to send to it again`;
}

export function listSuppressions(app: App, organizationId: string, page: Page): Suppression[] {
  return app.store.suppressions.list(organizationId, page.page, page.per).map(presentSuppression);
}

/** `idOrAddress`: the suppression's id or the suppressed address itself. */
export function getSuppression(app: App, organizationId: string, idOrAddress: string): Suppression {
  const row = app.store.suppressions.findByIdOrAddress(organizationId, idOrAddress);
  if (!row) throw notFound("Suppression not found");
  return presentSuppression(row);
}

/** Lifts the suppression: later sends to the address are tried again. Returns the deleted record. */
export function deleteSuppression(app: App, organizationId: string, idOrAddress: string): Suppression {
  return app.store.transaction(() => {
    const row = app.store.suppressions.findByIdOrAddress(organizationId, idOrAddress);
    if (!row) throw notFound("Suppression not found");
    app.store.suppressions.delete(organizationId, row.id);
    return presentSuppression(row);
  });
}
