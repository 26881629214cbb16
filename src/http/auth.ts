/**
 * The auth guards. `/v1` takes API keys only, `/organizations` access tokens only; the guard
 * finds the caller once per request and hands routes an organization id that every store
 * query takes, so tenancy cannot be forgotten by a route. It runs as a derive, before the
 * validation of the params, query and body: a refused credential is 401 whatever the request holds.
 */
import { Elysia } from "elysia";
import type { App } from "../app";
import { accessTokenPrefix, userOfAccessToken } from "../auth/access-tokens";
import { apiKeyPrefix, organizationOfApiKey } from "../auth/api-keys";
import { organizationOfMember } from "../auth/organizations";
import { unauthorized } from "../errors";

export function bearerToken(authorization: string | undefined): string {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization?.trim() ?? "");
  if (!match) throw unauthorized("Missing or malformed Authorization header (expected: Bearer <credential>)");
  return match[1]!;
}

/** The two credential kinds never mix; the prefix tells a misplaced one apart, for a clear refusal. */
function apiKeyOf(authorization: string | undefined): string {
  const credential = bearerToken(authorization);
  if (credential.startsWith(accessTokenPrefix)) throw unauthorized("Access tokens are not accepted under /v1: use an API key");
  return credential;
}

function accessTokenOf(authorization: string | undefined): string {
  const credential = bearerToken(authorization);
  if (credential.startsWith(apiKeyPrefix)) throw unauthorized("API keys are not accepted under /organizations: use an access token from POST /auth/login");
  return credential;
}

interface GuardContext {
  headers: Record<string, string | undefined>;
  params: Record<string, string | undefined>;
}

/** One guard shape for both families, so a route plugin can be written once for either guard. */
const organizationGuard = (name: string, organizationOf: (context: GuardContext) => Promise<string>) =>
  new Elysia({ name }).derive({ as: "scoped" }, async ({ headers, params }) => ({
    organizationId: await organizationOf({ headers, params: params as GuardContext["params"] }),
  }));

export type OrganizationGuard = ReturnType<typeof organizationGuard>;

/** `/v1`: an API key, acting for its own organization. */
export const apiKeyGuard = (app: App): OrganizationGuard =>
  organizationGuard("api-key-guard", ({ headers }) => organizationOfApiKey(app.store, apiKeyOf(headers.authorization), app.clock.now()));

/** `/organizations/:organization_id`: an access token whose user is a member of that organization. */
export const organizationMemberGuard = (app: App): OrganizationGuard =>
  organizationGuard("organization-member-guard", async ({ headers, params }) => {
    const userId = await userOfAccessToken(app.store, accessTokenOf(headers.authorization), app.clock.now());
    return organizationOfMember(app, userId, params.organization_id ?? "");
  });
