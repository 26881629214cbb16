/** Organizations as seen by a user: membership decides access to `/organizations/{id}/...`. */
import type { App } from "../app";
import { forbidden } from "../errors";

/**
 * The organization id when the user is a member, else 403 with the same words whether or not the
 * organization exists: a different answer for an unknown id would tell anyone with an account
 * which ids are real. 403 rather than 404 because existing clients rely on it for non-members.
 */
export async function organizationOfMember(app: App, userId: string, organizationId: string): Promise<string> {
  if (!(await app.store.accounts.findMembership(userId, organizationId))) throw forbidden("You are not a member of this organization");
  return organizationId;
}
