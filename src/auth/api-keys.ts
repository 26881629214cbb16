/** API keys: random, shown once, stored as a SHA-256 hash with a short display prefix. */
import type { App } from "../app";
import { notFound, unauthorized } from "../errors";
import { randomToken, sha256Hex, newId } from "../ids";
import { withTotal, type Page } from "../page";
import type { Aggregates } from "../store";
import { requiredName } from "./fields";
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

export async function createApiKey(store: Aggregates, organizationId: string, name: string, now: number): Promise<CreatedApiKey> {
  const key = newApiKeyValue();
  const row = { id: newId("key"), organizationId, name, prefix: key.slice(0, apiKeyPrefixLength), keyHash: sha256Hex(key), createdAt: now };
  await store.accounts.insertApiKey(row);
  return { id: row.id, organizationId, name, prefix: row.prefix, createdAt: now, key };
}

/** The organization an API key acts for; `lastUsedAt` is written at most once a minute per key. */
export async function organizationOfApiKey(store: Aggregates, key: string, now: number): Promise<string> {
  const row = await store.accounts.findApiKeyByHash(sha256Hex(key));
  if (!row) throw unauthorized("Invalid API key");
  if (row.lastUsedAt === null || now - row.lastUsedAt >= lastUsedResolutionMs) await store.accounts.touchApiKey(row.id, now);
  return row.organizationId;
}

/** A new named key for the organization; the record carries the key this once. */
export async function addApiKey(app: App, organizationId: string, input: { name?: string }) {
  const name = requiredName("name", input.name, apiKeyNameMaxLength);
  return presentCreatedApiKey(await createApiKey(app.store, organizationId, name, app.clock.now()));
}

export const listApiKeys = async (app: App, organizationId: string, page: Page) =>
  withTotal(page, (await app.store.accounts.listApiKeys(organizationId, page.page, page.per)).map(presentApiKey), () => app.store.accounts.countApiKeys(organizationId));

async function findApiKey(store: Aggregates, organizationId: string, keyId: string) {
  const row = await store.accounts.findApiKey(organizationId, keyId);
  if (!row) throw notFound("API key not found");
  return row;
}

export const getApiKey = async (app: App, organizationId: string, keyId: string) => presentApiKey(await findApiKey(app.store, organizationId, keyId));

/** Revokes at once: the next request with the key finds no row and gets 401, as does one whose body was still arriving, and its event streams and large downloads end. Returns the deleted record. */
export async function deleteApiKey(app: App, organizationId: string, keyId: string) {
  const deleted = await app.store.transaction(async (tx) => {
    const row = await findApiKey(tx, organizationId, keyId);
    await tx.accounts.deleteApiKey(organizationId, keyId);
    return presentApiKey(row);
  });
  app.revocations.noted(organizationId);
  return deleted;
}
