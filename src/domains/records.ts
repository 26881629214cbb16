/**
 * The DNS records a custom domain publishes for inboxd: MX for receiving; SPF, one DKIM key
 * record per key, and DMARC for sending; the MTA-STS host and policy id and the TLS reporting
 * address for TLS (recommended, not needed for the domain to count as verified). Pure: the
 * server's identity, the keys and the TLS records come in as values.
 */
import { isIPv6 } from "node:net";
import type { DkimKey, DkimKeyStatus } from "../dkim/keys";
import { dkimSelector, dkimTxtValue } from "../dkim/keys";

export type RecordPurpose = "receiving" | "sending" | "tls";

/** The values of the TLS records (mta-sts/policy.ts); undefined with INBOXD_MTA_STS_MODE=none. */
export type TlsRecordValues = { mtaSts: string; tlsRpt: string };

/** This server as other hosts see it: the MX target, and the addresses it sends from when configured. */
export type ServerIdentity = { hostname: string; publicIps: string[] };

export type RecordKey = Pick<DkimKey, "selector" | "algorithm" | "publicKeyBase64"> & { id: string; status: DkimKeyStatus; createdAt: number };

/** Oldest generation first, RSA before Ed25519 within one (the order generateDkimKeys makes them in). */
const byGeneration = (a: RecordKey, b: RecordKey) => a.createdAt - b.createdAt || Number(a.algorithm !== "rsa-sha256") - Number(b.algorithm !== "rsa-sha256");

/** What a look-up of the record checks. */
export type RecordCheckSpec = { kind: "mx" } | { kind: "spf" } | { kind: "dkim"; key: RecordKey } | { kind: "dmarc" } | { kind: "same-host" } | { kind: "txt"; prefix: string };

export type RecordSpec = {
  /** `<type> <name>`: where the record's last check is kept. */
  key: string;
  type: "MX" | "TXT" | "CNAME";
  name: string;
  value: string;
  priority?: number;
  purpose: RecordPurpose;
  check: RecordCheckSpec;
};

// RFC 5321 §5.1 only orders MX by preference; 10 leaves room for a backup MX on either side.
export const MX_PRIORITY = 10;
// RFC 7489 §6.3: quarantine asks receivers to treat unauthenticated mail as suspicious; relaxed
// alignment (the default, spelled out) lets mail sent from subdomains align too.
const DMARC_VALUE = "v=DMARC1; p=quarantine; adkim=r; aspf=r";

/** RFC 7208 §5: the server's own addresses when configured, else the `a` mechanism on its host name. */
export function spfValue(server: ServerIdentity): string {
  const mechanisms = server.publicIps.length
    ? server.publicIps.map((ip) => (isIPv6(ip) ? `ip6:${ip}` : `ip4:${ip}`))
    : [`a:${server.hostname}`];
  return `v=spf1 ${mechanisms.join(" ")} -all`;
}

export const dkimRecordName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;

/**
 * Longest custom domain name: its longest record name, a DKIM key's (a selector with a rotation
 * suffix of up to four digits, ../dkim/keys.ts), must stay within DNS's 253 characters (RFC 1035
 * §2.3.4). A longer name could be added but never verified: its key records cannot be published.
 */
export const MAX_CUSTOM_DOMAIN_LENGTH = 253 - dkimRecordName(dkimSelector(new Date(0), "rsa-sha256", "9999"), "").length;

export function domainRecords(server: ServerIdentity, domain: string, keys: RecordKey[], tls?: TlsRecordValues): RecordSpec[] {
  const record = (spec: Omit<RecordSpec, "key">): RecordSpec => ({ key: `${spec.type} ${spec.name}`, ...spec });
  return [
    record({ type: "MX", name: domain, value: server.hostname, priority: MX_PRIORITY, purpose: "receiving", check: { kind: "mx" } }),
    record({ type: "TXT", name: domain, value: spfValue(server), purpose: "sending", check: { kind: "spf" } }),
    ...[...keys].sort(byGeneration).map((key) =>
      record({ type: "TXT", name: dkimRecordName(key.selector, domain), value: dkimTxtValue(key), purpose: "sending", check: { kind: "dkim", key } }),
    ),
    record({ type: "TXT", name: `_dmarc.${domain}`, value: DMARC_VALUE, purpose: "sending", check: { kind: "dmarc" } }),
    ...(tls
      ? [
          // RFC 8461 §3.3: the policy host, served by inboxd with a certificate of its own (ACME).
          record({ type: "CNAME", name: `mta-sts.${domain}`, value: server.hostname, purpose: "tls", check: { kind: "same-host" } }),
          record({ type: "TXT", name: `_mta-sts.${domain}`, value: tls.mtaSts, purpose: "tls", check: { kind: "txt", prefix: "v=STSv1" } }),
          record({ type: "TXT", name: `_smtp._tls.${domain}`, value: tls.tlsRpt, purpose: "tls", check: { kind: "txt", prefix: "v=TLSRPTv1" } }),
        ]
      : []),
  ];
}
