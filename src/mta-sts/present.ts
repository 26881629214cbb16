/** A stored TLS report as the API shows it (docs/api.md "TLS reports"). */
import { iso } from "../clock";
import { resource } from "../present";
import type { TlsReportRecord } from "../store";

export function presentTlsReport(row: TlsReportRecord) {
  return resource({
    id: row.id,
    reportId: row.reportId,
    organizationName: row.organizationName,
    policyType: row.policyType,
    startAt: iso(row.startAt),
    endAt: iso(row.endAt),
    successfulSessions: row.successfulSessions,
    failedSessions: row.failedSessions,
    failureDetails: row.failureDetails.map(({ resultType, sessions, receivingMx }) => ({ resultType, sessions, ...(receivingMx ? { receivingMx } : {}) })),
    receivedAt: iso(row.receivedAt),
  });
}

export type TlsReport = ReturnType<typeof presentTlsReport>;
