/** The shapes of users, organizations and API keys as the API shows them. */
import { iso } from "../clock";
import { resource } from "../present";
import type { ApiKeyRecord, OrganizationRecord, UserRecord } from "../store";

export const presentUser = (row: UserRecord, organizationIds: string[]) =>
  resource({ id: row.id, email: row.email, firstName: row.firstName, lastName: row.lastName, organizations: organizationIds });

export const presentOrganization = (row: OrganizationRecord) =>
  resource({ id: row.id, name: row.name, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });

/** What presentApiKey reads: a stored key, or one just created (auth/api-keys.ts), which carries no hash and has no last use. */
type ShownApiKey = Omit<ApiKeyRecord, "keyHash" | "lastUsedAt"> & { lastUsedAt?: number | null };

/** Never the key itself: only its display prefix. `lastUsedAt` is left out until the key is used. */
export const presentApiKey = (row: ShownApiKey) =>
  resource({ id: row.id, organizationId: row.organizationId, name: row.name, prefix: row.prefix, createdAt: iso(row.createdAt), lastUsedAt: row.lastUsedAt == null ? undefined : iso(row.lastUsedAt) });

/** The one time the key is shown: on creation. */
export const presentCreatedApiKey = (created: ShownApiKey & { key: string }) => ({ ...presentApiKey(created), key: created.key });

export type User = ReturnType<typeof presentUser>;
export type Organization = ReturnType<typeof presentOrganization>;
export type CreatedApiKeyRecord = ReturnType<typeof presentCreatedApiKey>;
