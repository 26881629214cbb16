/** ACME accounts, the certificates inboxd obtains and renews, and the HTTP-01 challenges under way. */
import { and, asc, eq, lte } from "drizzle-orm";
import { unwantedAt } from "../unwanted-certificates";
import type { AcmeAccountRecord, TlsCertificateRecord } from "../records";
import type { SecretBox } from "../secret-box";
import type { Db } from "./db";
import { acmeAccounts, acmeChallenges, tlsCertificates } from "./schema/index";

export const certificatesStore = (db: Db, secrets: SecretBox) => {
  const opened = (row: TlsCertificateRecord): TlsCertificateRecord => ({ ...row, privateKeyPem: row.privateKeyPem === null ? null : secrets.open(row.privateKeyPem) });
  return {
    findAccount(directoryUrl: string): AcmeAccountRecord | undefined {
      const row = db.select().from(acmeAccounts).where(eq(acmeAccounts.directoryUrl, directoryUrl)).get();
      return row && { ...row, privateKeyPem: secrets.open(row.privateKeyPem) };
    },
    saveAccount(account: AcmeAccountRecord) {
      const row = { ...account, privateKeyPem: secrets.seal(account.privateKeyPem) };
      db.insert(acmeAccounts).values(row).onConflictDoUpdate({ target: acmeAccounts.directoryUrl, set: { email: row.email, privateKeyPem: row.privateKeyPem, accountUrl: row.accountUrl, updatedAt: row.updatedAt } }).run();
    },
    /** Every certificate, by name. */
    list(): TlsCertificateRecord[] {
      return db.select().from(tlsCertificates).orderBy(asc(tlsCertificates.name)).all().map(opened);
    },
    /** When each certificate last changed, without opening any key: what a node compares to know whether to reload. */
    versions(): { name: string; updatedAt: number }[] {
      return db.select({ name: tlsCertificates.name, updatedAt: tlsCertificates.updatedAt }).from(tlsCertificates).orderBy(asc(tlsCertificates.name)).all();
    },
    /** Adds names not yet known, due at once. */
    want(names: string[], now: number) {
      for (const name of names) db.insert(tlsCertificates).values({ name, failures: 0, nextAttemptAt: now, createdAt: now, updatedAt: now }).onConflictDoNothing().run();
    },
    forgetUnwanted(wanted: string[], now: number): string[] {
      return db.delete(tlsCertificates).where(unwantedAt(tlsCertificates, wanted, now)).returning({ name: tlsCertificates.name }).all().map((row) => row.name);
    },
    due(now: number): TlsCertificateRecord[] {
      return db.select().from(tlsCertificates).where(lte(tlsCertificates.nextAttemptAt, now)).orderBy(asc(tlsCertificates.nextAttemptAt)).all().map(opened);
    },
    /** Claims a try: moves the next one on before it starts; false when it is no longer due (claimed already). */
    postpone(name: string, now: number, nextAttemptAt: number): boolean {
      return db.update(tlsCertificates).set({ nextAttemptAt }).where(and(eq(tlsCertificates.name, name), lte(tlsCertificates.nextAttemptAt, now))).returning({ name: tlsCertificates.name }).all().length > 0;
    },
    recordIssued(name: string, issued: { certificatePem: string; privateKeyPem: string; notBefore: number; notAfter: number; nextAttemptAt: number }, now: number) {
      db.update(tlsCertificates)
        .set({ ...issued, privateKeyPem: secrets.seal(issued.privateKeyPem), failures: 0, lastError: null, updatedAt: now })
        .where(eq(tlsCertificates.name, name))
        .run();
    },
    recordFailure(name: string, failure: { failures: number; lastError: string; nextAttemptAt: number }, now: number) {
      db.update(tlsCertificates).set({ ...failure, updatedAt: now }).where(eq(tlsCertificates.name, name)).run();
    },
    putChallenge(token: string, keyAuthorization: string, expiresAt: number) {
      db.insert(acmeChallenges).values({ token, keyAuthorization, expiresAt }).onConflictDoUpdate({ target: acmeChallenges.token, set: { keyAuthorization, expiresAt } }).run();
    },
    /** The key authorization of a challenge under way; expired ones are forgotten. */
    challenge(token: string, now: number): string | undefined {
      db.delete(acmeChallenges).where(lte(acmeChallenges.expiresAt, now)).run();
      return db.select({ keyAuthorization: acmeChallenges.keyAuthorization }).from(acmeChallenges).where(eq(acmeChallenges.token, token)).get()?.keyAuthorization;
    },
    removeChallenge(token: string) {
      db.delete(acmeChallenges).where(eq(acmeChallenges.token, token)).run();
    },
  };
};
