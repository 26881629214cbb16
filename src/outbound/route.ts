/**
 * Where mail for a domain goes: its MX hosts in preference order (RFC 5321 §5.1), or the
 * configured relay. Addresses of each host are looked up only when it is tried.
 */
import { DnsLookupError, isNullMx, type MxRecord, type Resolver } from "../dns/resolver";
import { isForbiddenAddress } from "../net/address-policy";

/** A host to try, in order; `name` is what STARTTLS sends as SNI. */
export interface Hop {
  name: string;
  port: number;
  /** The domain's MTA-STS policy enforces TLS with a certificate valid for `name` (RFC 8461 §4.2). */
  verifiedTls?: boolean;
}

/** The domain cannot take mail at all: the recipients are rejected, never tried. */
export class UndeliverableDomainError extends Error {
  override readonly name = "UndeliverableDomainError";
}

/** No usable answer now (DNS trouble): try again later. */
export class TemporaryRouteError extends Error {
  override readonly name = "TemporaryRouteError";
}

/**
 * The MX hosts of `domain`, most preferred first, hosts of equal preference in random order so that
 * load spreads as their owner meant (§5.1). No MX at all: the domain itself, when it has an address
 * (the implicit MX). A null MX (RFC 7505 §3) or a domain that does not exist: UndeliverableDomainError.
 */
export async function mxHops(resolver: Resolver, domain: string, port: number, random: () => number = Math.random): Promise<Hop[]> {
  let records: MxRecord[];
  try {
    records = await resolver.mx(domain);
  } catch (error) {
    throw translate(error, domain, "MX");
  }
  if (isNullMx(records)) throw new UndeliverableDomainError(`${domain} publishes a null MX (RFC 7505): it accepts no mail`);
  // A "." among real hosts is a misconfiguration; the real hosts still work.
  const hosts = records.filter((record) => record.exchange !== "");
  if (hosts.length === 0) return [{ name: await implicitMx(resolver, domain), port }];
  const shuffled = hosts.map((record) => ({ record, tiebreak: random() }));
  shuffled.sort((a, b) => a.record.priority - b.record.priority || a.tiebreak - b.tiebreak);
  return shuffled.map(({ record }) => ({ name: record.exchange.replace(/\.$/, ""), port }));
}

/** RFC 5321 §5.1: with no MX, the domain's own A/AAAA is "treated as if it was associated with an implicit MX RR". */
async function implicitMx(resolver: Resolver, domain: string): Promise<string> {
  let addresses: string[];
  try {
    addresses = await resolver.lookupHostAddresses(domain);
  } catch (error) {
    throw translate(error, domain, "A/AAAA");
  }
  if (addresses.length === 0) throw new UndeliverableDomainError(`${domain} has no mail server (no MX, A or AAAA record)`);
  return domain;
}

/** The addresses of one host; [] when it has none (the caller moves on to the next host). */
export async function hopAddresses(resolver: Resolver, hop: Hop): Promise<string[]> {
  try {
    return await resolver.lookupHostAddresses(hop.name);
  } catch (error) {
    if (error instanceof DnsLookupError && error.kind === "nxdomain") return [];
    throw translate(error, hop.name, "A/AAAA");
  }
}

/**
 * The addresses of a host that inboxd may connect to, and those it refuses: a private, loopback,
 * link-local or reserved address (net/address-policy.ts) unless `allowPrivate`. A tenant names the
 * domains it sends to, and so whose MX answers inboxd follows: without this, a domain whose MX
 * points at 127.0.0.1 or the LAN would make inboxd a port scanner of its own network, the
 * connection's result read back in the delivery's last response.
 */
export function screenAddresses(addresses: string[], allowPrivate: boolean): { allowed: string[]; refused: string[] } {
  if (allowPrivate) return { allowed: addresses, refused: [] };
  return { allowed: addresses.filter((address) => !isForbiddenAddress(address)), refused: addresses.filter(isForbiddenAddress) };
}

function translate(error: unknown, name: string, what: string): Error {
  if (error instanceof DnsLookupError && error.kind === "nxdomain") return new UndeliverableDomainError(`${name} does not exist (${what} look-up: ${error.code})`);
  if (error instanceof DnsLookupError) return new TemporaryRouteError(`DNS ${what} look-up for ${name} failed: ${error.code}`);
  return error instanceof Error ? error : new Error(String(error));
}
