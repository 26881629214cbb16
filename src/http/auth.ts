/**
 * The auth guards. `/v1` takes API keys only, `/organizations` access tokens only; the guard
 * resolves the caller once per request and hands routes an organization id that every store
 * query takes, so tenancy cannot be forgotten by a route.
 */
import { Elysia } from "elysia";
import type { App } from "../app";
import { organizationOfApiKey } from "../auth/api-keys";
import { unauthorized } from "../errors";

export function bearerToken(authorization: string | undefined): string {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization?.trim() ?? "");
  if (!match) throw unauthorized("Missing or malformed Authorization header (expected: Bearer <credential>)");
  return match[1]!;
}

export const apiKeyGuard = (app: App) =>
  new Elysia({ name: "api-key-guard" }).resolve({ as: "scoped" }, ({ headers }) => ({
    organizationId: organizationOfApiKey(app.store, bearerToken(headers.authorization), app.clock.now()),
  }));
