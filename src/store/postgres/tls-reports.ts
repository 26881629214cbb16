/** TLS reports (RFC 8460) received about the domains we serve, by policy domain; as ../sqlite/tls-reports.ts. */
import { desc, eq, sql } from "drizzle-orm";
import type { TlsReportRecord } from "../records";
import type { TlsReportsStore } from "../store";
import { firstRow, type PgDb } from "./db";
import { tlsReports } from "./schema/index";

export function tlsReportsStore(db: PgDb): TlsReportsStore {
  return {
    /** A report sent twice (RFC 8460 §5.3 lets senders retry) is kept once. */
    async insert(rows: TlsReportRecord[]): Promise<void> {
      if (rows.length) await db.insert(tlsReports).values(rows).onConflictDoNothing();
    },
    async forDomain(domain: string, limit: number, offset: number): Promise<TlsReportRecord[]> {
      return db.select().from(tlsReports).where(eq(tlsReports.policyDomain, domain)).orderBy(desc(tlsReports.startAt), desc(tlsReports.id)).limit(limit).offset(offset);
    },
    async countForDomain(domain: string): Promise<number> {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM tls_reports WHERE policy_domain = ${domain}`))!.n;
    },
  };
}
