/**
 * Look-ups of a custom domain's records, each answering one question: is this record published
 * so that the rest of the world sees what inboxd needs? Protocol code: a resolver and plain
 * values in, an outcome out. mailauth (SPF, DKIM key look-ups) loads with the first check that
 * needs it: with the MIME and domain-list libraries it brings, several MB of memory that a server
 * checking no domain does not hold.
 */
import { createPublicKey } from "node:crypto";
import { DnsLookupError, isNullMx, type Resolver } from "../dns/resolver";
import { peerText } from "../net/peer-text";
import type { RecordKey, RecordSpec, ServerIdentity } from "./records";

/**
 * `missing`: nothing published yet (or any more); `failed`: published but wrong; `unknown`:
 * no usable answer now (a DNS failure worth retrying), which must not change what is known.
 */
export type CheckOutcome = { result: "verified" } | { result: "failed" | "missing" | "unknown"; reason: string };

const verified: CheckOutcome = { result: "verified" };
// A reason may quote what a domain publishes (any bytes a TXT record or a name may hold): kept as peer text.
const failed = (reason: string): CheckOutcome => ({ result: "failed", reason: peerText(reason) });
const missing = (reason: string): CheckOutcome => ({ result: "missing", reason: peerText(reason) });
const unknown = (reason: string): CheckOutcome => ({ result: "unknown", reason: peerText(reason) });

/** A failed look-up: the name does not exist (missing), or no answer now (unknown). */
function lookupFailure(error: unknown, notFound: string): CheckOutcome {
  if (error instanceof DnsLookupError) {
    return error.kind === "nxdomain" ? missing(notFound) : unknown(`DNS look-up of ${error.hostname} failed (${error.code}); will retry`);
  }
  const code = (error as { code?: string }).code;
  if (code === "ENOTFOUND" || code === "ENODATA") return missing(notFound);
  throw error;
}

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, "") === b.toLowerCase().replace(/\.$/, "");

/**
 * Verified when the domain's most preferred MX records (RFC 5321 §5.1: lowest preference first)
 * name our host. As a backup MX only, senders deliver elsewhere, and the MTA-STS policy inboxd
 * serves (naming only our host) would make senders skip the preferred one.
 */
export async function checkMx(resolver: Resolver, domain: string, hostname: string): Promise<CheckOutcome> {
  const notFound = `no MX record at ${domain}`;
  let records;
  try {
    records = await resolver.mx(domain);
  } catch (error) {
    return lookupFailure(error, notFound);
  }
  if (records.length === 0) return missing(notFound);
  // RFC 7505 §3: a null MX says the domain takes no mail at all.
  if (isNullMx(records)) return failed(`${domain} publishes a null MX (it accepts no mail); point its MX to ${hostname}`);
  const preferred = Math.min(...records.map((record) => record.priority));
  // An RRset has no order (RFC 2181 §5), and ours may be named twice: the most preferred of ours counts.
  const ours = records.filter((record) => sameHost(record.exchange, hostname)).sort((a, b) => a.priority - b.priority)[0];
  if (ours?.priority === preferred) return verified;
  if (ours) {
    const before = records.filter((record) => record.priority < ours.priority).map((record) => `${record.exchange} (${record.priority})`);
    return failed(`the MX records of ${domain} prefer ${before.join(", ")} over ${hostname} (${ours.priority}): mail goes there first`);
  }
  const targets = records.map((record) => record.exchange).join(", ");
  return failed(`the MX records of ${domain} point to ${targets}, not to ${hostname}`);
}

/** The addresses this server sends from: configured, else those of its host name. */
async function serverAddresses(resolver: Resolver, server: ServerIdentity): Promise<string[] | CheckOutcome> {
  if (server.publicIps.length) return server.publicIps;
  const unknownAddress = unknown(`this server's own address is unknown: publish A/AAAA records for ${server.hostname} or set INBOXD_PUBLIC_IPS`);
  try {
    const addresses = await resolver.lookupHostAddresses(server.hostname);
    return addresses.length ? addresses : unknownAddress;
  } catch (error) {
    if (error instanceof DnsLookupError && error.kind === "temporary") return unknown(`DNS look-up of ${server.hostname} failed (${error.code}); will retry`);
    return unknownAddress;
  }
}

/**
 * Verified when the domain's SPF policy, evaluated as a receiver would (RFC 7208 §4, includes and
 * redirects followed), passes every address this server sends from.
 */
export async function checkSpf(resolver: Resolver, domain: string, server: ServerIdentity): Promise<CheckOutcome> {
  const addresses = await serverAddresses(resolver, server);
  if (!Array.isArray(addresses)) return addresses;
  const hostname = server.hostname;
  const { spf } = await import("mailauth/lib/spf");
  for (const ip of addresses) {
    const result = await spf({ sender: `postmaster@${domain}`, ip, helo: hostname, mta: hostname, resolver: resolver.forMailauth, maxElapsedTime: 10_000 });
    const detail = (result.status.comment || "").replace(`${hostname}: `, "");
    switch (result.status.result) {
      case "pass":
        continue;
      case "none":
        return missing(`no SPF record at ${domain}`);
      case "temperror":
        return unknown(`SPF evaluation of ${domain} failed for now (${detail}); will retry`);
      case "permerror":
        return failed(`the SPF record of ${domain} is invalid: ${detail}`);
      default:
        return failed(`the SPF record of ${domain} does not authorise this server's address ${ip} (result: ${result.status.result})`);
    }
  }
  return verified;
}

/** The key as SubjectPublicKeyInfo DER, the form in which two keys compare by value. */
function spkiOf(key: Pick<RecordKey, "algorithm" | "publicKeyBase64">) {
  const raw = Buffer.from(key.publicKeyBase64, "base64");
  const publicKey =
    key.algorithm === "rsa-sha256"
      ? createPublicKey({ key: raw, format: "der", type: "spki" })
      : createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  return publicKey.export({ type: "spki", format: "der" });
}

/** Verified when the key record at `name`, read as a DKIM verifier reads it, holds exactly this key. */
export async function checkDkim(resolver: Resolver, name: string, key: RecordKey): Promise<CheckOutcome> {
  let published;
  try {
    const { getPublicKey } = await import("mailauth/lib/tools");
    // RFC 6376 §3.6.1: a record whose h= leaves out sha256 makes verifiers refuse our signatures.
    // Read strictly, as verifiers that follow the RFC read it: a key record they discard (v=dkim1,
    // a syntax error, an Ed25519 key without k=) verified, and every signature then failed.
    published = await getPublicKey("DKIM", name, 1024, resolver.forMailauth, { hashAlgo: "sha256", strict: true });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (error instanceof DnsLookupError || code === "ENOTFOUND" || code === "ENODATA") return lookupFailure(error, `no DKIM record at ${name}`);
    return failed(`the DKIM record at ${name} is not usable: ${(error as Error).message}`);
  }
  // Tag values are case-sensitive (§3.2), and mailauth reads k= in any case: k=RSA names no algorithm.
  const declaredType = /(?:^|;)k=([^;]*)/.exec(published.rr)?.[1];
  if (declaredType !== undefined && declaredType !== "rsa" && declaredType !== "ed25519") return failed(`the DKIM record at ${name} is not usable: k=${declaredType} names no key type (rsa or ed25519, in lower case)`);
  const publishedSpki = createPublicKey(published.publicKey).export({ type: "spki", format: "der" });
  return publishedSpki.equals(spkiOf(key)) ? verified : failed(`the DKIM record at ${name} publishes another key than this domain's`);
}

// RFC 7489 §6.4: the record starts with the v tag (a case-insensitive name), whose value is exactly DMARC1.
const DMARC_RECORD = /^[vV][ \t]*=[ \t]*DMARC1[ \t]*(;|$)/;

/** Verified when `_dmarc.<domain>` publishes one DMARC record (RFC 7489 §6.6.3: several mean none). */
export async function checkDmarc(resolver: Resolver, domain: string): Promise<CheckOutcome> {
  const name = `_dmarc.${domain}`;
  const notFound = `no DMARC record at ${name}`;
  let records;
  try {
    records = (await resolver.txt(name)).filter((record) => DMARC_RECORD.test(record));
  } catch (error) {
    return lookupFailure(error, notFound);
  }
  if (records.length === 0) return missing(notFound);
  if (records.length > 1) return failed(`${name} publishes ${records.length} DMARC records; receivers ignore all of them unless there is exactly one`);
  return verified;
}

/** Verified when `name` reaches this server: a CNAME to the host name, or the same addresses. */
export async function checkSameHost(resolver: Resolver, name: string, hostname: string): Promise<CheckOutcome> {
  const notFound = `${name} has no CNAME or A/AAAA record`;
  let addresses, ours;
  try {
    [addresses, ours] = await Promise.all([resolver.lookupHostAddresses(name), resolver.lookupHostAddresses(hostname)]);
  } catch (error) {
    return lookupFailure(error, notFound);
  }
  if (addresses.length === 0) return missing(notFound);
  const foreign = addresses.filter((address) => !ours.includes(address));
  return foreign.length ? failed(`${name} resolves to ${foreign.join(", ")}, not to ${hostname}`) : verified;
}

/** `tag=value` pairs of a TXT record (RFC 8461 §3.1, RFC 8460 §3), names in lower case. */
const tagsOf = (record: string) =>
  new Map(
    record
      .split(";")
      .map((part) => part.trim())
      .filter((part) => part.includes("="))
      .map((part) => [part.slice(0, part.indexOf("=")).trim().toLowerCase(), part.slice(part.indexOf("=") + 1).trim()] as const),
  );

/**
 * Verified when `name` publishes exactly one TXT record starting with `prefix`, holding every tag
 * of `expected` with its value: other tags (extensions, RFC 8461 §3.1) may stand beside them, and
 * a list-valued tag (TLS-RPT's `rua`, RFC 8460 §3) may name other URIs beside ours.
 */
export async function checkTxt(resolver: Resolver, name: string, prefix: string, expected: string): Promise<CheckOutcome> {
  const notFound = `no ${prefix} record at ${name}`;
  let records;
  try {
    records = (await resolver.txt(name)).filter((record) => record.startsWith(prefix));
  } catch (error) {
    return lookupFailure(error, notFound);
  }
  if (records.length === 0) return missing(notFound);
  if (records.length > 1) return failed(`${name} publishes ${records.length} ${prefix} records; there must be exactly one`);
  const published = tagsOf(records[0]!);
  const holds = [...tagsOf(expected)].every(([tag, value]) => published.get(tag)?.split(",").some((item) => item.trim() === value));
  return holds ? verified : failed(`${name} publishes '${records[0]}', without '${expected}'`);
}

/** Runs the look-up a record spec asks for. */
export function checkRecord(resolver: Resolver, server: ServerIdentity, domain: string, record: RecordSpec): Promise<CheckOutcome> {
  switch (record.check.kind) {
    case "mx":
      return checkMx(resolver, domain, server.hostname);
    case "spf":
      return checkSpf(resolver, domain, server);
    case "dkim":
      return checkDkim(resolver, record.name, record.check.key);
    case "dmarc":
      return checkDmarc(resolver, domain);
    case "same-host":
      return checkSameHost(resolver, record.name, server.hostname);
    case "txt":
      return checkTxt(resolver, record.name, record.check.prefix, record.value);
  }
}
