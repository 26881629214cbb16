/**
 * Verification of a custom domain: look every record up now, then record in one transaction
 * what was found, hand signing over to keys whose records verified, and schedule the next look.
 */
import type { App } from "../app";
import type { DkimKeyRecord, DomainRecord, Transaction } from "../store";
import { checkRecord, type CheckOutcome } from "./dns-checks";
import { checkedRecords, serverIdentity } from "./present";
import { tlsRecordValues } from "../mta-sts/policy";
import { dkimRecordName, domainRecords } from "./records";
import { nextCheckAt, nextRecordCheck, summarize, type RecordCheck } from "./status";

/** Looks up the domain's records and saves the outcome; undefined when the domain was deleted meanwhile. */
export async function verifyDomainRecords(app: App, row: DomainRecord): Promise<DomainRecord | undefined> {
  const server = serverIdentity(app.config);
  const tls = tlsRecordValues(app.config);
  const records = domainRecords(server, row.name, await app.store.dkimKeys.forDomain(row.name), tls);
  const outcomes = new Map(await Promise.all(records.map(async (record) => [record.key, await checkRecord(app.resolver, server, row.name, record)] as const)));
  // Only the store is awaited from here on: the domain and its keys are read again inside the
  // transaction, since a rotation or a deletion may have happened while the look-ups were in flight.
  return app.store.transaction(async (tx) => {
    const current = await tx.domains.findById(row.id);
    if (!current) return undefined;
    const now = app.clock.now();
    const keys = await tx.dkimKeys.forDomain(current.name);
    const checks: Record<string, RecordCheck> = {};
    for (const record of domainRecords(server, current.name, keys, tls)) {
      const outcome = outcomes.get(record.key);
      const previous = current.recordChecks[record.key];
      checks[record.key] = outcome ? nextRecordCheck(previous, outcome) : (previous ?? { status: "pending" });
    }
    const keysChanged = await handOverKeys(tx, current.name, keys, checks, outcomes, now);
    return saveDomainState(app, tx, { ...current, checkedAt: now }, checks, now, keysChanged);
  });
}

/**
 * A pending key whose record verified starts signing, and retires the key of its algorithm that
 * signed before; an active key whose record failed (gone, or another key there) stops signing
 * until it verifies again, as receivers could not check its signatures; a retired key whose record
 * is gone from DNS is dropped (its owner removed it). Returns whether any key changed.
 */
async function handOverKeys(tx: Transaction, domain: string, keys: DkimKeyRecord[], checks: Record<string, RecordCheck>, outcomes: Map<string, CheckOutcome>, now: number): Promise<boolean> {
  let changed = false;
  for (const key of keys) {
    const recordKey = `TXT ${dkimRecordName(key.selector, domain)}`;
    const outcome = outcomes.get(recordKey)?.result;
    if (key.status === "pending" && checks[recordKey]?.status === "verified") {
      await tx.dkimKeys.setStatus(key.id, "active", now);
      for (const old of keys) {
        if (old.id !== key.id && old.status === "active" && old.algorithm === key.algorithm) await tx.dkimKeys.setStatus(old.id, "retired", now);
      }
      changed = true;
    } else if (key.status === "active" && checks[recordKey]?.status === "failed") {
      await tx.dkimKeys.setStatus(key.id, "pending", now);
      changed = true;
    } else if (key.status === "retired" && (outcome === "missing" || outcome === "failed")) {
      await tx.dkimKeys.remove(key.id);
      changed = true;
    }
  }
  return changed;
}

/**
 * Saves record checks and the domain status they give (for the records the domain must publish
 * now), with the next background check; `updatedAt` moves only when something visible changed.
 * Runs inside the caller's transaction, `tx`.
 */
export async function saveDomainState(app: App, tx: Transaction, row: DomainRecord, checks: Record<string, RecordCheck>, now: number, keysChanged = false): Promise<DomainRecord> {
  const records = checkedRecords(app, { ...row, recordChecks: checks }, await tx.dkimKeys.forDomain(row.name));
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
  await tx.domains.update(row.id, changes);
  return { ...row, ...changes };
}
