/**
 * Our own MTA-STS policy (RFC 8461) and TLS reporting record (RFC 8460): the policy file served at
 * https://mta-sts.<domain>/.well-known/mta-sts.txt for the service domain and each verified custom
 * domain (all take mail at INBOXD_HOSTNAME), and the TXT records that announce them.
 */
import { createHash } from "node:crypto";
import type { Config } from "../config";
import type { TlsRecordValues } from "../domains/records";
import { tlsReportAddress } from "./tls-reports";

export const POLICY_PATH = "/.well-known/mta-sts.txt";
/** RFC 8461 §3.2: max_age in seconds, up to a year; a week lets a change of mode or MX take effect within days. */
const MAX_AGE_SECONDS = 604_800;

type PolicyConfig = Pick<Config, "hostname" | "mtaStsMode">;

/** RFC 8461 §3.2: the policy file, CRLF-separated key/value lines. */
export function policyText({ hostname, mtaStsMode }: PolicyConfig): string {
  return ["version: STSv1", `mode: ${mtaStsMode}`, `mx: ${hostname}`, `max_age: ${MAX_AGE_SECONDS}`, ""].join("\r\n");
}

/** RFC 8461 §3.1: the id changes whenever the policy does (1-32 letters and digits): a digest of its text. */
export const policyId = (config: PolicyConfig) => createHash("sha256").update(policyText(config)).digest("hex").slice(0, 32);

/** The TXT record at _mta-sts.<domain> (RFC 8461 §3.1). */
export const mtaStsRecord = (config: PolicyConfig) => `v=STSv1; id=${policyId(config)}`;

/** The TXT record at _smtp._tls.<domain> (RFC 8460 §3): reports come to mta-sts/tls-reports.ts. */
export const tlsRptRecord = ({ hostname }: Pick<Config, "hostname">) => `v=TLSRPTv1; rua=mailto:${tlsReportAddress(hostname)}`;

/** The TLS records every domain publishes; none with INBOXD_MTA_STS_MODE=none. */
export const tlsRecordValues = (config: PolicyConfig): TlsRecordValues | undefined =>
  config.mtaStsMode === "none" ? undefined : { mtaSts: mtaStsRecord(config), tlsRpt: tlsRptRecord(config) };
