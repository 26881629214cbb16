/** Users, organizations, memberships, access tokens and API keys (../sqlite/accounts.ts). */
import { and, desc, eq, lte, sql } from "drizzle-orm";
import type { AccountsStore } from "../store";
import { firstRow, lockKeys, type PgDb } from "./db";
import { accessTokens, apiKeys, memberships, organizations, users } from "./schema/index";

export function accountsStore(db: PgDb, inTransaction: boolean): AccountsStore {
  return {
    async insertUser(row) {
      await db.insert(users).values(row);
    },
    /**
     * Case-insensitive: the unique index is on lower(email) (migrations/postgres/0001_mail.sql). Holds
     * the address until the transaction ends, so that of two registrations of it the second finds the first.
     */
    async findUserByEmail(email) {
      await lockKeys(db, inTransaction, [`users:${email.toLowerCase()}`]);
      const [row] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`);
      return row;
    },
    async findUser(id) {
      const [row] = await db.select().from(users).where(eq(users.id, id));
      return row;
    },
    async createOrganization(org, now) {
      const row = { ...org, createdAt: now, updatedAt: now };
      await db.insert(organizations).values(row);
      return row;
    },
    async findOrganization(id) {
      const [row] = await db.select().from(organizations).where(eq(organizations.id, id));
      return row;
    },
    async insertMembership(row) {
      await db.insert(memberships).values(row);
    },
    async findMembership(userId, organizationId) {
      const [row] = await db.select().from(memberships).where(and(eq(memberships.userId, userId), eq(memberships.organizationId, organizationId)));
      return row;
    },
    /** Oldest membership first, so the default organization leads (ids break ties: they are time-ordered). */
    async organizationIdsOfUser(userId) {
      const rows = await db.select({ id: memberships.organizationId }).from(memberships).where(eq(memberships.userId, userId)).orderBy(memberships.createdAt, memberships.organizationId);
      return rows.map((row) => row.id);
    },
    async insertAccessToken(row) {
      await db.insert(accessTokens).values(row);
    },
    async findAccessTokenByHash(tokenHash) {
      const [row] = await db.select().from(accessTokens).where(eq(accessTokens.tokenHash, tokenHash));
      return row;
    },
    async deleteExpiredAccessTokens(userId, now) {
      await db.delete(accessTokens).where(and(eq(accessTokens.userId, userId), lte(accessTokens.expiresAt, now)));
    },
    async deleteAccessToken(tokenHash) {
      const deleted = await db.delete(accessTokens).where(eq(accessTokens.tokenHash, tokenHash)).returning({ tokenHash: accessTokens.tokenHash });
      return deleted.length > 0;
    },
    async insertApiKey(key) {
      await db.insert(apiKeys).values(key);
    },
    async findApiKeyByHash(keyHash) {
      const [row] = await db.select().from(apiKeys).where(eq(apiKeys.keyHash, keyHash));
      return row;
    },
    async touchApiKey(id, now) {
      await db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, id));
    },
    async findApiKey(organizationId, id) {
      const [row] = await db.select().from(apiKeys).where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.id, id)));
      return row;
    },
    /** Newest first; the (time-ordered) id breaks ties within one millisecond. */
    async listApiKeys(organizationId, page, per) {
      return db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId)).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id)).limit(per).offset((page - 1) * per);
    },
    async countApiKeys(organizationId) {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM api_keys WHERE organization_id = ${organizationId}`))!.n;
    },
    async deleteApiKey(organizationId, id) {
      await db.delete(apiKeys).where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.id, id)));
    },
  };
}
