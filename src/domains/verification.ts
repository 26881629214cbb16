/**
 * Verification of a custom domain: look every record up now, then record in one transaction
 * what was found, hand signing over to keys whose records verified, and schedule the next look.
 */
import type { App } from "../app";
import type { RecordCheck } from "../store/sqlite/schema/index";
import { createResolver } from "../dns/resolver";
import type { DkimKeyRow } from "../store/sqlite/dkim-keys";
import type { DomainRow } from "../store/sqlite/domains";
import { checkRecord, type CheckOutcome } from "./dns-checks";
import { checkedRecords, serverIdentity } from "./present";
import { dkimRecordName, domainRecords } from "./records";
import { nextCheckAt, nextRecordCheck, summarize } from "./status";

/** Looks up the domain's records and saves the outcome; undefined when the domain was deleted meanwhile. */
export async function verifyDomainRecords(app: App, row: DomainRow): Promise<DomainRow | undefined> {
  const resolver = createResolver(app.config.dnsServers);
  const server = serverIdentity(app.config);
  const records = domainRecords(server, row.name, app.store.dkimKeys.forDomain(row.name));
  const outcomes = new Map(await Promise.all(records.map(async (record) => [record.key, await checkRecord(resolver, server, row.name, record)] as const)));
  // No await from here on: the domain and its keys are read again inside the transaction, since a
  // rotation or a deletion may have happened while the look-ups were in flight.
  return app.store.transaction(() => {
    const current = app.store.domains.findById(row.id);
    if (!current) return undefined;
    const now = app.clock.now();
    const keys = app.store.dkimKeys.forDomain(current.name);
    const checks: Record<string, RecordCheck> = {};
    for (const record of domainRecords(server, current.name, keys)) {
      const outcome = outcomes.get(record.key);
      const previous = current.recordChecks[record.key];
      checks[record.key] = outcome ? nextRecordCheck(previous, outcome) : (previous ?? { status: "pending" });
    }
    const keysChanged = handOverKeys(app, current.name, keys, checks, outcomes, now);
    return saveDomainState(app, { ...current, checkedAt: now }, checks, now, keysChanged);
  });
}

/**
 * A pending key whose record verified starts signing, and retires the key of its algorithm that
 * signed before; a retired key whose record is gone from DNS is dropped (its owner removed it).
 * Returns whether any key changed.
 */
function handOverKeys(app: App, domain: string, keys: DkimKeyRow[], checks: Record<string, RecordCheck>, outcomes: Map<string, CheckOutcome>, now: number): boolean {
  let changed = false;
  for (const key of keys) {
    const recordKey = `TXT ${dkimRecordName(key.selector, domain)}`;
    const outcome = outcomes.get(recordKey)?.result;
    if (key.status === "pending" && checks[recordKey]?.status === "verified") {
      app.store.dkimKeys.setStatus(key.id, "active", now);
      for (const old of keys) {
        if (old.id !== key.id && old.status === "active" && old.algorithm === key.algorithm) app.store.dkimKeys.setStatus(old.id, "retired", now);
      }
      changed = true;
    } else if (key.status === "retired" && (outcome === "missing" || outcome === "failed")) {
      app.store.dkimKeys.remove(key.id);
      changed = true;
    }
  }
  return changed;
}

/**
 * Saves record checks and the domain status they give (for the records the domain must publish
 * now), with the next background check; `updatedAt` moves only when something visible changed.
 * Runs inside the caller's transaction.
 */
export function saveDomainState(app: App, row: DomainRow, checks: Record<string, RecordCheck>, now: number, keysChanged = false): DomainRow {
  const records = checkedRecords(app, { ...row, recordChecks: checks });
  const recordChecks = Object.fromEntries(records.map(({ key, status, reason }) => [key, reason === undefined ? { status } : { status, reason }]));
  const summary = summarize(records);
  const changed = keysChanged || summary.status !== row.status || !Bun.deepEquals(recordChecks, row.recordChecks);
  if (summary.status !== row.status) {
    const reasons = records.filter((record) => record.status !== "verified" && record.reason).map((record) => record.reason);
    app.log.info("domain status changed", { domain: row.name, from: row.status, to: summary.status, ...(reasons.length ? { reasons: reasons.join("; ") } : {}) });
  }
  const changes = {
    status: summary.status,
    receiving: summary.receiving,
    sending: summary.sending,
    recordChecks,
    verifiedAt: summary.status !== "verified" ? null : row.status === "verified" && row.verifiedAt !== null ? row.verifiedAt : now,
    checkedAt: row.checkedAt,
    recordsChangedAt: row.recordsChangedAt,
    nextCheckAt: nextCheckAt(summary.status, row.recordsChangedAt, now),
    updatedAt: changed ? now : row.updatedAt,
  };
  app.store.domains.update(row.id, changes);
  return { ...row, ...changes };
}
