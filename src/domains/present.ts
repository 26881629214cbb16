/** The Domain resource and its records as the API shows them (contract.md "Domain"). */
import type { App } from "../app";
import { iso } from "../clock";
import type { Config } from "../config";
import { resource } from "../present";
import type { DomainRow } from "../store/sqlite/domains";
import type { DkimKeyRow } from "../store/sqlite/dkim-keys";
import { domainRecords, type ServerIdentity } from "./records";
import type { CheckedRecord } from "./status";

export const serverIdentity = (config: Config): ServerIdentity => ({ hostname: config.hostname.toLowerCase(), publicIps: config.publicIps });

/** The records the domain must publish now, each with the outcome of its last look-up (pending before the first). */
export function checkedRecords(app: App, row: DomainRow, keys: DkimKeyRow[] = app.store.dkimKeys.forDomain(row.name)): CheckedRecord[] {
  return domainRecords(serverIdentity(app.config), row.name, keys).map((spec) => ({ ...spec, ...(row.recordChecks[spec.key] ?? { status: "pending" }) }));
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

export function presentDomain(app: App, row: DomainRow) {
  return resource({
    id: row.id,
    organizationId: row.organizationId,
    name: row.name,
    status: row.status,
    verified: row.status === "verified",
    receiving: row.receiving,
    sending: row.sending,
    records: checkedRecords(app, row).map(presentRecord),
    verifiedAt: row.verifiedAt === null ? undefined : iso(row.verifiedAt),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });
}

export type Domain = ReturnType<typeof presentDomain>;
