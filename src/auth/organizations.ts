/** Organizations as seen by a user: membership decides access to `/organizations/{id}/...`. */
import type { App } from "../app";
import { forbidden, notFound } from "../errors";

/** The organization id when the user is a member: 404 when it does not exist, 403 when not a member. */
export function organizationOfMember(app: App, userId: string, organizationId: string): string {
  if (!app.store.accounts.findOrganization(organizationId)) throw notFound("Organization not found");
  if (!app.store.accounts.findMembership(userId, organizationId)) throw forbidden("You are not a member of this organization");
  return organizationId;
}
