/**
 * Reading other domains' MTA-STS (RFC 8461): the `_mta-sts` TXT record (§3.1), the policy file
 * (§3.2), and whether an MX host matches the policy's `mx` patterns (§4.1). Pure: text in, values out.
 */
import type { MtaStsPolicyRecord } from "../store/records";

export type ParsedPolicy = Pick<MtaStsPolicyRecord, "mode" | "mxPatterns" | "maxAge">;

/** RFC 8461 §3.2: max_age is at most 31557600 seconds (about a year). */
const MAX_AGE_LIMIT = 31_557_600;

/** §3.1: the id of the one `v=STSv1` record; undefined when there is none, or more than one (then no policy is published). */
export function policyIdOf(txtRecords: string[]): string | undefined {
  const records = txtRecords.filter((record) => /^v=STSv1\s*(;|$)/.test(record));
  if (records.length !== 1) return undefined;
  const fields = new Map(records[0]!.split(";").map((field) => field.trim().split("=", 2) as [string, string?]).map(([key, value]) => [key.trim(), value?.trim()]));
  const id = fields.get("id");
  return id && /^[A-Za-z0-9]{1,32}$/.test(id) ? id : undefined;
}

/** §3.2: `key: value` lines; version STSv1, a mode, max_age, and (unless mode none) one or more mx. Throws on anything else. */
export function parsePolicy(text: string): ParsedPolicy {
  const values = new Map<string, string[]>();
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
    if (colon < 0) throw new Error(`the policy line '${line.slice(0, 80)}' is not 'key: value'`);
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    const earlier = values.get(key);
    if (earlier) earlier.push(value);
    else values.set(key, [value]);
  }
  const one = (key: string) => values.get(key)?.[0];
  if (one("version") !== "STSv1") throw new Error(`the policy's version is '${one("version") ?? ""}', not STSv1`);
  const mode = one("mode");
  if (mode !== "enforce" && mode !== "testing" && mode !== "none") throw new Error(`the policy's mode '${mode ?? ""}' is not enforce, testing or none`);
  const maxAgeText = one("max_age") ?? "";
  if (!/^\d{1,10}$/.test(maxAgeText) || Number(maxAgeText) > MAX_AGE_LIMIT) throw new Error(`the policy's max_age '${maxAgeText}' is not a number of seconds up to ${MAX_AGE_LIMIT}`);
  const mxPatterns = (values.get("mx") ?? []).map((pattern) => pattern.toLowerCase().replace(/\.$/, ""));
  if (mode !== "none" && mxPatterns.length === 0) throw new Error("the policy names no mx");
  return { mode, mxPatterns, maxAge: Number(maxAgeText) };
}

/** §4.1: an exact name, or `*.` standing for exactly one leftmost label. */
export function mxMatches(host: string, patterns: string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  return patterns.some((pattern) => (pattern.startsWith("*.") ? name.slice(name.indexOf(".") + 1) === pattern.slice(2) && name.indexOf(".") > 0 : name === pattern));
}
