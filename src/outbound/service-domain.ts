/**
 * The service's own mail domain (INBOXD_MAIL_DOMAIN): its DKIM keys, made on first start, and the
 * DNS records it needs as zone-file lines (`inboxd dns`).
 */
import type { App } from "../app";
import type { Config } from "../config";
import { generateDkimKeys } from "../dkim/keys";
import { domainRecords, spfValue, type RecordSpec } from "../domains/records";
import { newId } from "../ids";
import { tlsRecordValues } from "../mta-sts/policy";
import type { Aggregates, DkimKeyRecord } from "../store";

/** Generates the service domain's RSA and Ed25519 keys unless it has keys already; true when it made them. */
export async function ensureServiceDkimKeys(app: App): Promise<boolean> {
  const domain = app.config.mailDomain.toLowerCase();
  if ((await app.store.dkimKeys.forDomain(domain)).length > 0) return false;
  const keys = await generateDkimKeys(app.clock.date());
  const now = app.clock.now();
  const rows: DkimKeyRecord[] = keys.map((key) => ({ id: newId("dkim"), domain, organizationId: null, ...key, status: "active", createdAt: now, updatedAt: now }));
  // The transaction keeps a half-written pair impossible. Nodes that start together on one
  // PostgreSQL race between the check and here: the loser's insert is refused (one selector per
  // domain) and it signs with the winner's keys.
  try {
    await app.store.transaction((tx) => tx.dkimKeys.insert(rows));
  } catch (error) {
    if ((await app.store.dkimKeys.forDomain(domain)).length > 0) return false;
    throw error;
  }
  app.log.info("DKIM keys generated for the service domain", { domain, selectors: rows.map((row) => row.selector).join(",") });
  return true;
}

/** The records of the service domain, with every key it publishes (active, pending or retired). */
export async function serviceDomainRecords(config: Config, store: Pick<Aggregates, "dkimKeys">): Promise<RecordSpec[]> {
  const domain = config.mailDomain.toLowerCase();
  return domainRecords({ hostname: config.hostname, publicIps: config.publicIps }, domain, await store.dkimKeys.forDomain(domain), tlsRecordValues(config));
}

const TTL_SECONDS = 3600;

/** RFC 1035 §5.1 master-file lines: absolute names, one record per line, long TXT values split. */
export function zoneFileLines(config: Config, records: RecordSpec[]): string {
  const { hostname, mailDomain, publicIps } = config;
  const fqdn = (name: string) => `${name.replace(/\.$/, "")}.`;
  const line = (name: string, type: string, data: string) => `${fqdn(name)}\t${TTL_SECONDS}\tIN\t${type}\t${data}`;
  const lines = [`; DNS records for ${mailDomain}: MX for receiving; SPF, DKIM and DMARC for sending; MTA-STS and TLS reporting (inboxd dns)`];
  for (const record of records) {
    if (record.type === "MX") lines.push(line(record.name, "MX", `${record.priority ?? 10} ${fqdn(record.value)}`));
    else if (record.type === "CNAME") lines.push(line(record.name, "CNAME", fqdn(record.value)));
    else lines.push(line(record.name, "TXT", txtData(record.value)));
  }
  // Every return path (bounces+...@INBOXD_HOSTNAME) and the EHLO name are the host name, so
  // receivers check SPF against it (RFC 7208 §2.3, §2.4): without its own record they get "none".
  if (hostname.toLowerCase() !== mailDomain.toLowerCase()) lines.push(line(hostname, "TXT", txtData(spfValue({ hostname, publicIps }))));
  // The MX target must resolve to this server; only the operator knows its public address.
  if (publicIps.length > 0) {
    for (const ip of publicIps) lines.push(line(hostname, ip.includes(":") ? "AAAA" : "A", ip));
  } else {
    lines.push(`; ${fqdn(hostname)} needs an A (and AAAA) record with this server's public address (or set INBOXD_PUBLIC_IPS)`);
  }
  return lines.join("\n") + "\n";
}

/** RFC 1035 §3.3.14: character-strings of at most 255 bytes, quoted, with `"` and `\` escaped (§5.1). */
function txtData(value: string): string {
  const bytes = Buffer.from(value);
  const chunks: string[] = [];
  for (let offset = 0; offset < bytes.length; offset += 255) chunks.push(bytes.subarray(offset, offset + 255).toString());
  return chunks.map((chunk) => `"${chunk.replace(/[\\"]/g, "\\$&")}"`).join(" ");
}
