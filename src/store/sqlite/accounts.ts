/** Users, organizations, memberships, access tokens and API keys. */
import { and, desc, eq, lte, sql } from "drizzle-orm";
import { accessTokens, apiKeys, memberships, organizations, users } from "./schema/index";
import type { Db } from "./db";

export type UserRow = typeof users.$inferSelect;
export type OrganizationRow = typeof organizations.$inferSelect;
export type MembershipRow = typeof memberships.$inferSelect;
export type AccessTokenRow = typeof accessTokens.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;

export const accountsStore = (db: Db) => {
  // Prepared once: the auth guards run these on every request (building a drizzle query costs
  // more than the indexed look-up itself).
  const apiKeyByHash = db.select().from(apiKeys).where(eq(apiKeys.keyHash, sql.placeholder("keyHash"))).prepare();
  const touchApiKey = db.update(apiKeys).set({ lastUsedAt: sql`${sql.placeholder("now")}` }).where(eq(apiKeys.id, sql.placeholder("id"))).prepare();
  const accessTokenByHash = db.select().from(accessTokens).where(eq(accessTokens.tokenHash, sql.placeholder("tokenHash"))).prepare();
  const organizationById = db.select().from(organizations).where(eq(organizations.id, sql.placeholder("id"))).prepare();
  const membership = db
    .select()
    .from(memberships)
    .where(and(eq(memberships.userId, sql.placeholder("userId")), eq(memberships.organizationId, sql.placeholder("organizationId"))))
    .prepare();
  // Counts read the (organization_id, created_at) index only, as every count of a list does.
  const apiKeyCount = db.$client.query<{ n: number }, { organizationId: string }>("SELECT count(*) AS n FROM api_keys WHERE organization_id = $organizationId");

  return {
    insertUser(row: UserRow) {
      db.insert(users).values(row).run();
    },
    /** The column is `COLLATE NOCASE`: emails match case-insensitively. */
    findUserByEmail(email: string): UserRow | undefined {
      return db.select().from(users).where(eq(users.email, email)).get();
    },
    findUser(id: string): UserRow | undefined {
      return db.select().from(users).where(eq(users.id, id)).get();
    },

    createOrganization(org: { id: string; name: string }, now: number): OrganizationRow {
      const row = { ...org, createdAt: now, updatedAt: now };
      db.insert(organizations).values(row).run();
      return row;
    },
    findOrganization(id: string): OrganizationRow | undefined {
      return organizationById.get({ id });
    },

    insertMembership(row: MembershipRow) {
      db.insert(memberships).values(row).run();
    },
    findMembership(userId: string, organizationId: string): MembershipRow | undefined {
      return membership.get({ userId, organizationId });
    },
    /** Oldest membership first, so the default organization leads. */
    organizationIdsOfUser(userId: string): string[] {
      return db.select({ id: memberships.organizationId }).from(memberships).where(eq(memberships.userId, userId)).orderBy(memberships.createdAt, sql`rowid`).all().map((r) => r.id);
    },

    insertAccessToken(row: AccessTokenRow) {
      db.insert(accessTokens).values(row).run();
    },
    findAccessTokenByHash(tokenHash: string): AccessTokenRow | undefined {
      return accessTokenByHash.get({ tokenHash });
    },
    deleteExpiredAccessTokens(userId: string, now: number) {
      db.delete(accessTokens).where(and(eq(accessTokens.userId, userId), lte(accessTokens.expiresAt, now))).run();
    },
    deleteAccessToken(tokenHash: string): boolean {
      return db.delete(accessTokens).where(eq(accessTokens.tokenHash, tokenHash)).returning({ tokenHash: accessTokens.tokenHash }).get() !== undefined;
    },

    insertApiKey(key: Omit<ApiKeyRow, "lastUsedAt">) {
      db.insert(apiKeys).values(key).run();
    },
    findApiKeyByHash(keyHash: string): ApiKeyRow | undefined {
      return apiKeyByHash.get({ keyHash });
    },
    touchApiKey(id: string, now: number) {
      touchApiKey.run({ id, now });
    },
    findApiKey(organizationId: string, id: string): ApiKeyRow | undefined {
      return db.select().from(apiKeys).where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.id, id))).get();
    },
    /** Newest first; rowid breaks ties between keys created in the same millisecond. */
    listApiKeys(organizationId: string, page: number, per: number): ApiKeyRow[] {
      return db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId)).orderBy(desc(apiKeys.createdAt), desc(sql`rowid`)).limit(per).offset((page - 1) * per).all();
    },
    countApiKeys(organizationId: string): number {
      return apiKeyCount.get({ organizationId })!.n;
    },
    deleteApiKey(organizationId: string, id: string) {
      db.delete(apiKeys).where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.id, id))).run();
    },
  };
};
