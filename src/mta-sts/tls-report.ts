/**
 * TLS reports (RFC 8460) as other domains' sending systems mail them to our `rua` address: a
 * multipart/report (§5.3) whose `application/tlsrpt+gzip` (or `+json`) part holds the JSON report
 * (§4.4). Read into one entry per policy domain: session counts and the kinds of failure.
 */
import { gunzipSync } from "node:zlib";
import { simpleParser } from "mailparser";
import { asLimitError, BOUNDED_PARSER_OPTIONS } from "../mail/limits";
import { storableText } from "../store/storable-text";

/** A report is a few KiB; this bounds a gzip bomb. */
const MAX_REPORT_BYTES = 1024 * 1024;
/**
 * A message that could hold such a report: its part at most MAX_REPORT_BYTES, in base64, and the
 * rest of the message. A larger one is not parsed at all (on the event loop, before the reply).
 */
const MAX_REPORT_MESSAGE_BYTES = 2 * MAX_REPORT_BYTES;
const REPORT_TYPES = ["application/tlsrpt+gzip", "application/tlsrpt+json"];

export type TlsReportPolicy = {
  policyType: string;
  policyDomain: string;
  successfulSessions: number;
  failedSessions: number;
  failureDetails: { resultType: string; sessions: number; receivingMx: string | null }[];
};

export type TlsReport = { reportId: string; organizationName: string; startAt: number; endAt: number; policies: TlsReportPolicy[] };

/** The report in a received message; null when the message holds none that can be read. */
export async function parseTlsReportMessage(raw: Buffer): Promise<TlsReport | null> {
  if (raw.length > MAX_REPORT_MESSAGE_BYTES) return null;
  const mail = await simpleParser(raw, BOUNDED_PARSER_OPTIONS).catch((error: unknown) => {
    throw asLimitError(error);
  });
  const part = mail.attachments.find((attachment) => REPORT_TYPES.includes(attachment.contentType.toLowerCase()));
  if (!part) return null;
  try {
    const json = part.contentType.toLowerCase().endsWith("gzip") ? gunzipSync(part.content, { maxOutputLength: MAX_REPORT_BYTES }) : part.content;
    if (json.length > MAX_REPORT_BYTES) return null;
    return readTlsReport(JSON.parse(json.toString("utf8"), (_key, value: unknown) => (typeof value === "string" ? storableText(value) : value)));
  } catch {
    return null;
  }
}

/**
 * RFC 8460 §4.4's policy types. Any other string made each entry a row of its own: one 21 KB
 * report of 5,000 made-up types stored 5,000 rows (and logged 5,000 lines), and anyone may send one.
 */
const POLICY_TYPES = new Set(["tlsa", "sts", "no-policy-found"]);

/**
 * The longest text field kept, in UTF-8 bytes: a report is kept once per author, report-id,
 * domain, type and content, and PostgreSQL refuses an entry of that key over about 2,700 bytes.
 * Counted in characters (1,024 of up to 4 bytes each), a report in a non-Latin script was
 * answered 451 at every try, and never stored.
 */
const MAX_TEXT_BYTES = 1024;

/** §4.4's JSON: its required fields, or null. */
export function readTlsReport(report: unknown): TlsReport | null {
  const object = (value: unknown) => (value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined);
  const text = (value: unknown) => (typeof value === "string" && value.length > 0 && Buffer.byteLength(value) <= MAX_TEXT_BYTES ? value : undefined);
  const count = (value: unknown) => (Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined);
  const root = object(report);
  const range = object(root?.["date-range"]);
  const reportId = text(root?.["report-id"]);
  const organizationName = text(root?.["organization-name"]);
  const startAt = Date.parse(text(range?.["start-datetime"]) ?? "");
  const endAt = Date.parse(text(range?.["end-datetime"]) ?? "");
  if (!reportId || !organizationName || Number.isNaN(startAt) || Number.isNaN(endAt) || !Array.isArray(root?.policies)) return null;
  const policies: TlsReportPolicy[] = [];
  for (const entry of root.policies as unknown[]) {
    const policy = object(object(entry)?.policy);
    const summary = object(object(entry)?.summary);
    const policyType = text(policy?.["policy-type"]);
    const policyDomain = text(policy?.["policy-domain"])?.toLowerCase().replace(/\.$/, "");
    const successfulSessions = count(summary?.["total-successful-session-count"]);
    const failedSessions = count(summary?.["total-failure-session-count"]);
    if (!policyType || !POLICY_TYPES.has(policyType) || !policyDomain || successfulSessions === undefined || failedSessions === undefined) return null;
    const details = Array.isArray(object(entry)?.["failure-details"]) ? (object(entry)!["failure-details"] as unknown[]) : [];
    const failureDetails = details.flatMap((detail) => {
      const resultType = text(object(detail)?.["result-type"]);
      const sessions = count(object(detail)?.["failed-session-count"]);
      return resultType && sessions !== undefined ? [{ resultType, sessions, receivingMx: text(object(detail)?.["receiving-mx-hostname"]) ?? null }] : [];
    });
    policies.push({ policyType, policyDomain, successfulSessions, failedSessions, failureDetails });
  }
  return { reportId, organizationName, startAt, endAt, policies };
}
