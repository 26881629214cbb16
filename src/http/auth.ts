/**
 * The auth guards. `/v1` takes API keys only, `/organizations` access tokens only; the guard
 * finds the caller once per request and hands routes an organization id that every store
 * query takes, so tenancy cannot be forgotten by a route. It runs as a derive, before the
 * validation of the params, query and body: a refused credential is 401 whatever the request holds.
 * Before a large body is read the body parser asks the route's guard already (callerCheckOf), so
 * that a stranger's upload is neither read nor counted against the message memory.
 */
import { Elysia } from "elysia";
import type { App } from "../app";
import { accessTokenPrefix, userOfAccessToken } from "../auth/access-tokens";
import { apiKeyPrefix, organizationOfApiKey } from "../auth/api-keys";
import { organizationOfMember } from "../auth/organizations";
import type { Revocations } from "../auth/revocations";
import { unauthorized } from "../errors";

export function bearerToken(authorization: string | undefined): string {
  // RFC 6750 §2.1: the scheme, one or more spaces, the token.
  const match = /^Bearer +([^\s]+)$/i.exec(authorization?.trim() ?? "");
  if (!match) throw unauthorized("Missing or malformed Authorization header (expected: Bearer <credential>)");
  return match[1]!;
}

/** The two credential kinds never mix; the prefix tells a misplaced one apart, for a clear refusal. */
function apiKeyOf(authorization: string | undefined): string {
  const credential = bearerToken(authorization);
  if (credential.startsWith(accessTokenPrefix)) throw unauthorized("Access tokens are not accepted under /v1: use an API key");
  return credential;
}

export function accessTokenOf(authorization: string | undefined, where = "under /organizations"): string {
  const credential = bearerToken(authorization);
  if (credential.startsWith(apiKeyPrefix)) throw unauthorized(`API keys are not accepted ${where}: use an access token from POST /auth/login`);
  return credential;
}

export interface GuardContext {
  request: Request;
  headers: Record<string, string | undefined>;
  params: Record<string, string | undefined>;
}

/** Whom a request acts for; what serves it after its answer began looks its credential up again with `credentialHolds`. */
export interface Caller {
  organizationId: string;
  credentialHolds(): Promise<boolean>;
}

/** The caller's organization, found once per request: the body parser may ask before the guard's derive does. */
export type CallerCheck = (context: GuardContext) => Promise<string>;

const callerChecks = new WeakMap<Function, CallerCheck>();

/**
 * One guard shape for both families, so a route plugin can be written once for either guard. A
 * caller found before its body arrived is looked up again when a credential was revoked meanwhile.
 */
function organizationGuard(name: string, revocations: Revocations, organizationOf: (context: GuardContext) => Promise<string>) {
  const found = new WeakMap<Request, { organizationId: Promise<string>; revocations: number }>();
  const check: CallerCheck = (context) => {
    const known = found.get(context.request);
    if (known && known.revocations === revocations.current) return known.organizationId;
    const organizationId = organizationOf(context);
    found.set(context.request, { organizationId, revocations: revocations.current });
    return organizationId;
  };
  const derive = async ({ request, headers, params }: { request: Request; headers: GuardContext["headers"]; params: unknown }) => {
    const context = { request, headers, params: params as GuardContext["params"] };
    const organizationId = await check(context);
    const caller: Caller = { organizationId, credentialHolds: () => organizationOf(context).then((found) => found === organizationId, () => false) };
    return { organizationId, caller };
  };
  callerChecks.set(derive, check);
  return new Elysia({ name }).derive({ as: "scoped" }, derive);
}

/** The credential check of a route's guard, from the hooks Elysia keeps for it; undefined for a route open to anyone. */
export function callerCheckOf(route: { hooks: { transform?: unknown } }): CallerCheck | undefined {
  const transforms = Array.isArray(route.hooks.transform) ? (route.hooks.transform as { fn?: Function }[]) : [];
  for (const hook of transforms) {
    const check = hook.fn && callerChecks.get(hook.fn);
    if (check) return check;
  }
  return undefined;
}

export type OrganizationGuard = ReturnType<typeof organizationGuard>;

/** `/v1`: an API key, acting for its own organization. */
export const apiKeyGuard = (app: App): OrganizationGuard =>
  organizationGuard("api-key-guard", app.revocations, ({ headers }) => organizationOfApiKey(app.store, apiKeyOf(headers.authorization), app.clock.now()));

/** `/organizations/:organization_id`: an access token whose user is a member of that organization. */
export const organizationMemberGuard = (app: App): OrganizationGuard =>
  organizationGuard("organization-member-guard", app.revocations, async ({ headers, params }) => {
    const userId = await userOfAccessToken(app.store, accessTokenOf(headers.authorization), app.clock.now());
    return organizationOfMember(app, userId, params.organization_id ?? "");
  });
