/** TLS reports (RFC 8460) received about the domains we serve, by policy domain; as ../sqlite/tls-reports.ts. */
import { and, desc, eq, gte, sql } from "drizzle-orm";
import type { TlsReportRecord } from "../records";
import type { TlsReportsStore } from "../store";
import { firstRow, type PgDb } from "./db";
import { tlsReports } from "./schema/index";

export function tlsReportsStore(db: PgDb): TlsReportsStore {
  return {
    /** A report sent twice (RFC 8460 §5.3 lets senders retry) is kept once. */
    async insert(rows: TlsReportRecord[]): Promise<string[]> {
      if (!rows.length) return [];
      return (await db.insert(tlsReports).values(rows).onConflictDoNothing().returning({ id: tlsReports.id })).map((row) => row.id);
    },
    async forDomain(domain: string, since: number, limit: number, offset: number): Promise<TlsReportRecord[]> {
      return db
        .select()
        .from(tlsReports)
        .where(and(eq(tlsReports.policyDomain, domain), gte(tlsReports.receivedAt, since)))
        .orderBy(desc(tlsReports.startAt), desc(tlsReports.id))
        .limit(limit)
        .offset(offset);
    },
    async countForDomain(domain: string, since: number): Promise<number> {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM tls_reports WHERE policy_domain = ${domain} AND received_at >= ${since}`))!.n;
    },
  };
}
