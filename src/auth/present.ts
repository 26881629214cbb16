/** The shapes of users, organizations and API keys as the API shows them. */
import { iso } from "../clock";
import { resource } from "../present";
import type { ApiKeyRow, OrganizationRow, UserRow } from "../store/sqlite/accounts";
import type { CreatedApiKey } from "./api-keys";

export const presentUser = (row: UserRow, organizationIds: string[]) =>
  resource({ id: row.id, email: row.email, firstName: row.firstName, lastName: row.lastName, organizations: organizationIds });

export const presentOrganization = (row: OrganizationRow) =>
  resource({ id: row.id, name: row.name, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });

/** Never the key itself: only its display prefix. `lastUsedAt` is left out until the key is used. */
export const presentApiKey = (row: Omit<ApiKeyRow, "keyHash" | "lastUsedAt"> & { lastUsedAt?: number | null }) =>
  resource({ id: row.id, organizationId: row.organizationId, name: row.name, prefix: row.prefix, createdAt: iso(row.createdAt), lastUsedAt: row.lastUsedAt == null ? undefined : iso(row.lastUsedAt) });

/** The one time the key is shown: on creation. */
export const presentCreatedApiKey = (created: CreatedApiKey) => ({ ...presentApiKey(created), key: created.key });

export type User = ReturnType<typeof presentUser>;
export type Organization = ReturnType<typeof presentOrganization>;
export type CreatedApiKeyRecord = ReturnType<typeof presentCreatedApiKey>;
