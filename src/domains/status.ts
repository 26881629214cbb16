/**
 * How look-ups turn into statuses: of each record, with its history, and of the domain as the
 * contract defines them. Pure, so the rules read in one place.
 */
import type { CheckOutcome } from "./dns-checks";
import type { RecordSpec } from "./records";

export type DomainStatus = "pending" | "verified" | "failed";
/** The last look-up of one record, keyed by `<type> <name>`; a record takes the same statuses as its domain. */
export type RecordCheck = { status: DomainStatus; reason?: string };

/**
 * A record found as required is verified; found but wrong, failed. One not found is pending while
 * it never verified, and failed once it did (it vanished): a domain in use must not quietly lose a
 * record. An unanswered look-up leaves the status as it was.
 */
export function nextRecordCheck(previous: RecordCheck | undefined, outcome: CheckOutcome): RecordCheck {
  const before = previous?.status ?? "pending";
  switch (outcome.result) {
    case "verified":
      return { status: "verified" };
    case "failed":
      return { status: "failed", reason: outcome.reason };
    case "missing":
      if (before === "verified") return { status: "failed", reason: `no longer published: ${outcome.reason}` };
      return { status: before, reason: outcome.reason };
    case "unknown":
      return before === "verified" ? { status: "verified" } : { status: before, reason: outcome.reason };
  }
}

export type CheckedRecord = RecordSpec & RecordCheck;

export type DomainSummary = { status: DomainStatus; verified: boolean; receiving: boolean; sending: boolean };

/**
 * docs/api.md: `receiving` is MX verified; `sending` is SPF, DMARC and DKIM verified, where DKIM
 * means the keys that sign now (a rotation's new keys count once they take over, retired keys
 * never); `verified` is every record verified but the TLS ones. Status: failed when a record failed, verified when
 * all are, pending otherwise.
 */
export function summarize(checked: CheckedRecord[]): DomainSummary {
  // The TLS records (MTA-STS, TLS reporting) are recommended: mail flows without them.
  const records = checked.filter((record) => record.purpose !== "tls");
  const isVerified = (record: CheckedRecord) => record.status === "verified";
  const ofKind = (kind: RecordSpec["check"]["kind"]) => records.filter((record) => record.check.kind === kind);
  const signing = records.filter((record) => record.check.kind === "dkim" && record.check.key.status === "active");
  const verified = records.every(isVerified);
  return {
    status: records.some((record) => record.status === "failed") ? "failed" : verified ? "verified" : "pending",
    verified,
    receiving: ofKind("mx").every(isVerified),
    sending: ofKind("spf").every(isVerified) && ofKind("dmarc").every(isVerified) && signing.length > 0 && signing.every(isVerified),
  };
}

const MINUTE = 60_000;
/** While a domain is being set up, its owner is editing DNS: look often, then settle to hourly. */
export const SETUP_CHECK_INTERVAL_MS = 5 * MINUTE;
export const SETUP_PERIOD_MS = 24 * 60 * MINUTE;
export const SETTLED_CHECK_INTERVAL_MS = 60 * MINUTE;

/** The next background check: every few minutes for a day after the records changed, until verified; hourly otherwise. */
export function nextCheckAt(status: DomainStatus, recordsChangedAt: number, now: number): number {
  const settingUp = status !== "verified" && now - recordsChangedAt < SETUP_PERIOD_MS;
  return now + (settingUp ? SETUP_CHECK_INTERVAL_MS : SETTLED_CHECK_INTERVAL_MS);
}
