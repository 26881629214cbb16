/**
 * Our TLS reporting address (RFC 8460 §3): `tlsrpt@<INBOXD_HOSTNAME>`, named by the `_smtp._tls`
 * record of every domain we serve. The SMTP server accepts it without an inbox and hands each
 * message here: the report is stored per policy domain and logged; the message itself is not kept.
 */
import type { App } from "../app";
import { iso } from "../clock";
import { newId, sha256Hex } from "../ids";

export const TLS_REPORT_LOCAL_PART = "tlsrpt";

export const tlsReportAddress = (hostname: string) => `${TLS_REPORT_LOCAL_PART}@${hostname.toLowerCase()}`;

export const isTlsReportAddress = (app: App, address: string) => address.toLowerCase().replace(/\.$/, "") === tlsReportAddress(app.config.hostname);

/** Domains a report names, as logged: how many, and the first few. */
const LOGGED_DOMAINS = 3;
/**
 * The names are the sender's: 880 made-up names of 1,000 characters each (a gzipped report of 8
 * KB) made a log line of 884 KB, written for each such message anyone sends.
 */
const someDomains = (domains: string[]) => ({ count: domains.length, domains: domains.slice(0, LOGGED_DOMAINS).map((domain) => domain.slice(0, 253)).join(",") });

/**
 * Stores the report a message holds, for each policy domain we serve (anyone may send one, about
 * any name); a message that holds none is dropped with a log line.
 */
export async function receiveTlsReport(app: App, raw: Buffer): Promise<void> {
  const { parseTlsReportMessage } = await import("./tls-report");
  const report = await parseTlsReportMessage(raw).catch(() => null);
  if (!report) {
    app.log.info("tls report ignored", { reason: "no readable RFC 8460 report in the message", bytes: raw.length });
    return;
  }
  const receivedAt = app.clock.now();
  // Kept once per content, not per author and id alone: those are the sender's to write.
  const contentDigest = sha256Hex(JSON.stringify(report));
  const { policies: named, ...about } = report;
  const served = await Promise.all(named.map(async (policy) => (await app.store.domains.findByName(policy.policyDomain)) !== undefined));
  const policies = named.filter((_, index) => served[index]);
  if (policies.length < named.length) app.log.info("tls report ignored", { reason: "about a domain we do not serve", ...someDomains(named.filter((_, index) => !served[index]).map((policy) => policy.policyDomain)) });
  const rows = policies.map((policy) => ({ id: newId("tlsrpt"), ...about, ...policy, receivedAt, contentDigest }));
  const kept = new Set(await app.store.tlsReports.insert(rows));
  const copies = rows.filter((row) => !kept.has(row.id));
  if (copies.length) app.log.info("tls report ignored", { reason: "a copy of a report kept already (sent again)", ...someDomains(copies.map((row) => row.policyDomain)), reportId: report.reportId });
  for (const policy of rows.filter((row) => kept.has(row.id))) {
    app.log.info("tls report received", {
      domain: policy.policyDomain,
      from: report.organizationName,
      period: `${iso(report.startAt)}/${iso(report.endAt)}`,
      successful: policy.successfulSessions,
      failed: policy.failedSessions,
      ...(policy.failureDetails.length ? { failures: policy.failureDetails.map((detail) => `${detail.resultType}=${detail.sessions}`).join(",") } : {}),
    });
  }
}
