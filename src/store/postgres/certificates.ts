/**
 * ACME accounts, the certificates inboxd obtains and renews, and the HTTP-01 challenges under way,
 * as ../sqlite/certificates.ts; shared by every node, so that each greets with the same
 * certificate and answers any node's challenge.
 */
import { and, asc, eq, lte } from "drizzle-orm";
import { unwantedAt } from "../unwanted-certificates";
import type { AcmeAccountRecord, TlsCertificateRecord } from "../records";
import type { SecretBox } from "../secret-box";
import type { CertificatesStore } from "../store";
import type { PgDb } from "./db";
import { acmeAccounts, acmeChallenges, tlsCertificates } from "./schema/index";

export function certificatesStore(db: PgDb, secrets: SecretBox): CertificatesStore {
  const opened = (row: TlsCertificateRecord): TlsCertificateRecord => ({ ...row, privateKeyPem: row.privateKeyPem === null ? null : secrets.open(row.privateKeyPem) });
  return {
    async findAccount(directoryUrl: string): Promise<AcmeAccountRecord | undefined> {
      const [row] = await db.select().from(acmeAccounts).where(eq(acmeAccounts.directoryUrl, directoryUrl));
      return row && { ...row, privateKeyPem: secrets.open(row.privateKeyPem) };
    },
    async saveAccount(account: AcmeAccountRecord): Promise<void> {
      const row = { ...account, privateKeyPem: secrets.seal(account.privateKeyPem) };
      await db.insert(acmeAccounts).values(row).onConflictDoUpdate({ target: acmeAccounts.directoryUrl, set: { email: row.email, privateKeyPem: row.privateKeyPem, accountUrl: row.accountUrl, updatedAt: row.updatedAt } });
    },
    async list(): Promise<TlsCertificateRecord[]> {
      return (await db.select().from(tlsCertificates).orderBy(asc(tlsCertificates.name))).map(opened);
    },
    async versions(): Promise<{ name: string; updatedAt: number }[]> {
      return db.select({ name: tlsCertificates.name, updatedAt: tlsCertificates.updatedAt }).from(tlsCertificates).orderBy(asc(tlsCertificates.name));
    },
    async want(names: string[], now: number): Promise<void> {
      if (names.length) await db.insert(tlsCertificates).values(names.map((name) => ({ name, failures: 0, nextAttemptAt: now, createdAt: now, updatedAt: now }))).onConflictDoNothing();
    },
    async forgetUnwanted(wanted: string[], now: number): Promise<string[]> {
      return (await db.delete(tlsCertificates).where(unwantedAt(tlsCertificates, wanted, now)).returning({ name: tlsCertificates.name })).map((row) => row.name);
    },
    async due(now: number): Promise<TlsCertificateRecord[]> {
      return (await db.select().from(tlsCertificates).where(lte(tlsCertificates.nextAttemptAt, now)).orderBy(asc(tlsCertificates.nextAttemptAt))).map(opened);
    },
    /** One UPDATE: of two nodes claiming one try, the second finds it no longer due once the first commits. */
    async postpone(name: string, now: number, nextAttemptAt: number): Promise<boolean> {
      const claimed = await db.update(tlsCertificates).set({ nextAttemptAt }).where(and(eq(tlsCertificates.name, name), lte(tlsCertificates.nextAttemptAt, now))).returning({ name: tlsCertificates.name });
      return claimed.length > 0;
    },
    async recordIssued(name: string, issued: { certificatePem: string; privateKeyPem: string; notBefore: number; notAfter: number; nextAttemptAt: number }, now: number): Promise<void> {
      await db
        .update(tlsCertificates)
        .set({ ...issued, privateKeyPem: secrets.seal(issued.privateKeyPem), failures: 0, lastError: null, updatedAt: now })
        .where(eq(tlsCertificates.name, name));
    },
    async recordFailure(name: string, failure: { failures: number; lastError: string; nextAttemptAt: number }, now: number): Promise<void> {
      await db.update(tlsCertificates).set({ ...failure, updatedAt: now }).where(eq(tlsCertificates.name, name));
    },
    async putChallenge(token: string, keyAuthorization: string, expiresAt: number): Promise<void> {
      await db.insert(acmeChallenges).values({ token, keyAuthorization, expiresAt }).onConflictDoUpdate({ target: acmeChallenges.token, set: { keyAuthorization, expiresAt } });
    },
    async challenge(token: string, now: number): Promise<string | undefined> {
      await db.delete(acmeChallenges).where(lte(acmeChallenges.expiresAt, now));
      const [row] = await db.select({ keyAuthorization: acmeChallenges.keyAuthorization }).from(acmeChallenges).where(eq(acmeChallenges.token, token));
      return row?.keyAuthorization;
    },
    async removeChallenge(token: string): Promise<void> {
      await db.delete(acmeChallenges).where(eq(acmeChallenges.token, token));
    },
  };
}
