/** API keys: random, shown once, stored as a SHA-256 hash with a short display prefix. */
import type { App } from "../app";
import { notFound, unauthorized } from "../errors";
import { randomToken, sha256Hex, newId } from "../ids";
import type { Store } from "../store/sqlite/index";
import { requiredText } from "./fields";
import { presentApiKey, presentCreatedApiKey } from "./present";

export const apiKeyPrefix = "ik_";
export const apiKeyPrefixLength = 11;
export const apiKeyNameMaxLength = 100;
const lastUsedResolutionMs = 60_000;

/** `ik_` + 32 hex characters (128 bits): recognisable in logs and secret scanners. */
export const newApiKeyValue = () => `${apiKeyPrefix}${randomToken(16)}`;

export interface CreatedApiKey {
  id: string;
  organizationId: string;
  name: string;
  prefix: string;
  createdAt: number;
  key: string;
}

export function createApiKey(store: Store, organizationId: string, name: string, now: number): CreatedApiKey {
  const key = newApiKeyValue();
  const row = { id: newId("key"), organizationId, name, prefix: key.slice(0, apiKeyPrefixLength), keyHash: sha256Hex(key), createdAt: now };
  store.accounts.insertApiKey(row);
  return { id: row.id, organizationId, name, prefix: row.prefix, createdAt: now, key };
}

/** The organization an API key acts for; `lastUsedAt` is written at most once a minute per key. */
export function organizationOfApiKey(store: Store, key: string, now: number): string {
  const row = store.accounts.findApiKeyByHash(sha256Hex(key));
  if (!row) throw unauthorized("Invalid API key");
  if (row.lastUsedAt === null || now - row.lastUsedAt >= lastUsedResolutionMs) store.accounts.touchApiKey(row.id, now);
  return row.organizationId;
}

/** A new named key for the organization; the record carries the key this once. */
export function addApiKey(app: App, organizationId: string, input: { name?: string }) {
  const name = requiredText("name", input.name, apiKeyNameMaxLength);
  return presentCreatedApiKey(createApiKey(app.store, organizationId, name, app.clock.now()));
}

export const listApiKeys = (app: App, organizationId: string, page: { page: number; per: number }) =>
  app.store.accounts.listApiKeys(organizationId, page.page, page.per).map(presentApiKey);

function findApiKey(app: App, organizationId: string, keyId: string) {
  const row = app.store.accounts.findApiKey(organizationId, keyId);
  if (!row) throw notFound("API key not found");
  return row;
}

export const getApiKey = (app: App, organizationId: string, keyId: string) => presentApiKey(findApiKey(app, organizationId, keyId));

/** Revokes at once: the next request with the key finds no row and gets 401. Returns the deleted record. */
export function deleteApiKey(app: App, organizationId: string, keyId: string) {
  return app.store.transaction(() => {
    const row = findApiKey(app, organizationId, keyId);
    app.store.accounts.deleteApiKey(organizationId, keyId);
    return presentApiKey(row);
  });
}
