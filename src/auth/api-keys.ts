/** API keys: random, shown once, stored as a SHA-256 hash with a short display prefix. */
import { randomToken, sha256Hex, newId } from "../ids";
import { unauthorized } from "../errors";
import type { Store } from "../store";

export const apiKeyPrefixLength = 11;
const lastUsedResolutionMs = 60_000;

/** `ik_` + 32 hex characters (128 bits): recognisable in logs and secret scanners. */
export const newApiKeyValue = () => `ik_${randomToken(16)}`;

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
