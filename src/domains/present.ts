/** The Domain resource and its records as the API shows them (docs/api.md "Domain"). */
import type { App } from "../app";
import { iso } from "../clock";
import type { Config } from "../config";
import { resource } from "../present";
import type { Aggregates, DkimKeyRecord, DomainRecord as StoredDomain } from "../store";
import { tlsRecordValues } from "../mta-sts/policy";
import { domainRecords, type ServerIdentity } from "./records";
import type { CheckedRecord } from "./status";

export const serverIdentity = (config: Config): ServerIdentity => ({ hostname: config.hostname.toLowerCase(), publicIps: config.publicIps });

/**
 * The records the domain must publish now, each with the outcome of its last look-up (pending
 * before the first). `keys`: the domain's DKIM keys (`dkimKeys.forDomain`).
 */
export function checkedRecords(app: App, row: StoredDomain, keys: DkimKeyRecord[]): CheckedRecord[] {
  return domainRecords(serverIdentity(app.config), row.name, keys, tlsRecordValues(app.config)).map((spec) => ({ ...spec, ...(row.recordChecks[spec.key] ?? { status: "pending" }) }));
}

/** `priority` on MX only; `reason` (why it is not verified yet) only where the last look-up gave one. */
export function presentRecord(record: CheckedRecord) {
  const { type, name, value, priority, purpose, status, reason } = record;
  return {
    type,
    name,
    value,
    ...(priority === undefined ? {} : { priority }),
    purpose,
    status,
    ...(status === "verified" || !reason ? {} : { reason }),
  };
}

export type DomainRecord = ReturnType<typeof presentRecord>;

/** `store`: where its keys are read (the caller's transaction, when in one). */
export async function presentDomain(app: App, store: Aggregates, row: StoredDomain) {
  const keys = await store.dkimKeys.forDomain(row.name);
  return resource({
    id: row.id,
    organizationId: row.organizationId,
    name: row.name,
    status: row.status,
    verified: row.status === "verified",
    receiving: row.receiving,
    sending: row.sending,
    records: checkedRecords(app, row, keys).map(presentRecord),
    verifiedAt: row.verifiedAt === null ? undefined : iso(row.verifiedAt),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });
}

export type Domain = Awaited<ReturnType<typeof presentDomain>>;
