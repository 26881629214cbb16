// Puts a domain's records, as the API lists them, into the loopback DNS server, as its owner would.
import type { DnsServer } from "../peers/dns-server";

export type ApiRecord = { type: "MX" | "TXT" | "CNAME"; name: string; value: string; priority?: number; purpose: string; status: string; reason?: string };

/** Every TXT record at a name is replaced by those the list names there; MX likewise. */
export function publishRecords(dns: DnsServer, records: ApiRecord[]): void {
  const txt = new Map<string, string[]>();
  for (const record of records) {
    if (record.type === "MX") dns.set(record.name, "MX", [{ exchange: record.value, priority: record.priority ?? 10 }]);
    else if (record.type === "CNAME") dns.set(record.name, "CNAME", [record.value]);
    else txt.set(record.name, [...(txt.get(record.name) ?? []), record.value]);
  }
  for (const [name, values] of txt) dns.set(name, "TXT", values);
}

export const recordOf = (records: ApiRecord[], kind: "MX" | "SPF" | "DMARC" | "DKIM-RSA" | "DKIM-ED25519"): ApiRecord => {
  const found = records.find((record) => {
    if (kind === "MX") return record.type === "MX";
    if (kind === "SPF") return record.value.startsWith("v=spf1");
    if (kind === "DMARC") return record.value.startsWith("v=DMARC1");
    return record.value.startsWith(`v=DKIM1; k=${kind === "DKIM-RSA" ? "rsa" : "ed25519"};`);
  });
  if (!found) throw new Error(`no ${kind} record in ${JSON.stringify(records)}`);
  return found;
};
