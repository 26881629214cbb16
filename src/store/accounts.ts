/** Users, organizations, memberships, access tokens and API keys. */
import { and, eq } from "drizzle-orm";
import { apiKeys, organizations } from "../db/schema";
import type { Db } from "./db";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export const accountsStore = (db: Db) => ({
  createOrganization(org: { id: string; name: string }, now: number) {
    db.insert(organizations).values({ ...org, createdAt: now, updatedAt: now }).run();
  },
  insertApiKey(key: Omit<ApiKeyRow, "lastUsedAt">) {
    db.insert(apiKeys).values(key).run();
  },
  findApiKeyByHash(keyHash: string): ApiKeyRow | undefined {
    return db.select().from(apiKeys).where(eq(apiKeys.keyHash, keyHash)).get();
  },
  touchApiKey(id: string, now: number) {
    db.update(apiKeys).set({ lastUsedAt: now }).where(and(eq(apiKeys.id, id))).run();
  },
});
