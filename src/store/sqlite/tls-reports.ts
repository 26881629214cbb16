/** TLS reports (RFC 8460) received about the domains we serve, by policy domain. */
import { and, desc, eq, gte } from "drizzle-orm";
import type { TlsReportRecord } from "../records";
import type { Db } from "./db";
import { tlsReports } from "./schema/index";

export const tlsReportsStore = (db: Db) => {
  const countOfDomain = db.$client.query<{ n: number }, [string, number]>("SELECT count(*) AS n FROM tls_reports WHERE policy_domain = ?1 AND received_at >= ?2");
  return {
    /** A report sent twice (RFC 8460 §5.3 lets senders retry) is kept once. */
    insert(rows: TlsReportRecord[]): string[] {
      if (!rows.length) return [];
      return db.insert(tlsReports).values(rows).onConflictDoNothing().returning({ id: tlsReports.id }).all().map((row) => row.id);
    },
    /** The newest first. */
    forDomain(domain: string, since: number, limit: number, offset: number): TlsReportRecord[] {
      return db
        .select()
        .from(tlsReports)
        .where(and(eq(tlsReports.policyDomain, domain), gte(tlsReports.receivedAt, since)))
        .orderBy(desc(tlsReports.startAt), desc(tlsReports.id))
        .limit(limit)
        .offset(offset)
        .all();
    },
    countForDomain(domain: string, since: number): number {
      return countOfDomain.get(domain, since)!.n;
    },
  };
};
