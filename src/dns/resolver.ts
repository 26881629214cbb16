// The one DNS resolver of inboxd: MX, A, AAAA and TXT look-ups for delivery, authentication,
// domain checks and webhook hosts, with "does not exist" told apart from "try again later".
import { getServers } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import type * as dnsPacket from "dns-packet";
import type { DNSResolver } from "mailauth";
import type { Config } from "../config";
import { askServer, parseServerAddress, WireError, type RecordAnswer, type ServerAddress, type WireReply } from "./wire";

export type MxRecord = { exchange: string; priority: number };

/**
 * `nxdomain`: the name does not exist (code ENOTFOUND), or cannot, being malformed (EBADNAME);
 * a permanent answer. `temporary`: no usable answer now (ESERVFAIL, EREFUSED, ETIMEOUT,
 * ECONNREFUSED, EBADRESP); worth retrying later.
 */
export type DnsFailureKind = "nxdomain" | "temporary";

export class DnsLookupError extends Error {
  override readonly name = "DnsLookupError";
  constructor(
    readonly kind: DnsFailureKind,
    /** The code Node's dns module would give, which is also what mailauth reads. */
    readonly code: string,
    readonly hostname: string,
    readonly rrtype: string,
  ) {
    super(`${rrtype} ${hostname}: ${code}`);
  }
}

export type ResolverOptions = {
  /** Per question and server, per transport. */
  timeoutMs?: number;
  /** Rounds over the server list before giving up. */
  tries?: number;
};

/**
 * Every look-up gives [] for a name that exists without records of the type (NODATA), and
 * rejects with DnsLookupError when the name does not exist or no server answered usefully.
 */
export type Resolver = {
  /** Unsorted, as published: ordering by priority is the caller's job. [] when the name has no MX. */
  mx(name: string): Promise<MxRecord[]>;
  a(name: string): Promise<string[]>;
  aaaa(name: string): Promise<string[]>;
  /** One string per TXT record, its character-strings joined (RFC 7208 §3.3, RFC 6376 §3.6.2.2). */
  txt(name: string): Promise<string[]>;
  /** The names the reverse zone gives an address (RFC 1035 §3.5 in-addr.arpa, RFC 3596 §2.5 ip6.arpa). */
  ptr(ip: string): Promise<string[]>;
  /** A and AAAA together; an IP literal is returned as it is. */
  lookupHostAddresses(name: string): Promise<string[]>;
  /** mailauth's `resolver` option: dns.promises.resolve's shapes and error codes. */
  forMailauth: DNSResolver;
};

const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_TRIES = 2;
const MAX_CNAME_CHAIN = 8;

/**
 * RFC 7505 §3: a domain that takes no mail publishes a single MX with an empty exchange
 * (the root, "."), which `mx()` returns as `{exchange: "", priority: 0}`, like Node's resolveMx.
 */
export function isNullMx(records: MxRecord[]): boolean {
  return records.length === 1 && records[0].exchange === "";
}

/**
 * The resolver the configuration asks for (INBOXD_DNS_SERVERS), built here only: by the App for
 * every part of it (app.resolver), by `inboxd doctor`, which runs without an App, and by each
 * analysis thread, which cannot share the App's.
 */
export function configuredResolver(config: Pick<Config, "dnsServers">): Resolver {
  return createResolver(config.dnsServers);
}

/** `servers` as "host:port" strings (INBOXD_DNS_SERVERS); none: the system's name servers. */
export function createResolver(servers?: string[], options: ResolverOptions = {}): Resolver {
  const settings: LookupSettings = {
    servers: (servers?.length ? servers : getServers()).map(parseServerAddress),
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    tries: options.tries ?? DEFAULT_TRIES,
  };
  const ask = (name: string, type: dnsPacket.RecordType) => lookUp(settings, name, type);

  const resolver: Resolver = {
    mx: async (name) => (await ask(name, "MX")).map(toMxRecord),
    a: async (name) => (await ask(name, "A")).map((answer) => answer.data as string),
    aaaa: async (name) => (await ask(name, "AAAA")).map((answer) => answer.data as string),
    txt: async (name) => (await ask(name, "TXT")).map((answer) => Buffer.concat(txtChunks(answer)).toString()),
    ptr: async (ip) => (await ask(reverseName(ip), "PTR")).map((answer) => answer.data as string),
    async lookupHostAddresses(name) {
      if (isIP(name)) return [name];
      const [v4, v6] = await Promise.allSettled([resolver.a(name), resolver.aaaa(name)]);
      // One family failing temporarily hides addresses a connection could still reach: no partial list.
      const failures = [v4, v6].flatMap((outcome) => (outcome.status === "rejected" ? [outcome.reason] : []));
      const temporary = failures.find((error) => !(error instanceof DnsLookupError) || error.kind === "temporary");
      if (temporary) throw temporary;
      if (failures.length === 2) throw failures[0];
      return [v4, v6].flatMap((outcome) => (outcome.status === "fulfilled" ? outcome.value : []));
    },
    forMailauth: async (name, rrtype) => {
      const type = rrtype.toUpperCase();
      if (!MAILAUTH_TYPES.has(type)) throw Object.assign(new Error(`${type} ${name}: ENOTIMP`), { code: "ENOTIMP" });
      const answers = await ask(name, type as dnsPacket.RecordType);
      // dns.promises.resolve rejects an empty answer with ENODATA; mailauth counts on telling it from ENOTFOUND.
      if (answers.length === 0) throw Object.assign(new Error(`${type} ${name}: ENODATA`), { code: "ENODATA" });
      // Its TXT shape is one array of character-strings per record; MX gives {exchange, priority}
      // objects, which mailauth's declared DNSResolver type leaves out.
      return answers.map((answer) => {
        if (type === "TXT") return txtChunks(answer).map((chunk) => chunk.toString());
        if (type === "MX") return toMxRecord(answer) as unknown as string;
        return answer.data as string;
      }) as string[] | string[][];
    },
  };
  return resolver;
}

// What mailauth asks for: SPF (TXT, A, AAAA, MX, PTR), DKIM and DMARC (TXT, A, CNAME).
const MAILAUTH_TYPES = new Set(["A", "AAAA", "MX", "TXT", "CNAME", "PTR"]);

/** `192.0.2.7` → `7.2.0.192.in-addr.arpa`; IPv6 as reversed nibbles under `ip6.arpa`. */
export function reverseName(ip: string): string {
  const bytes = ipaddr.parse(ip).toByteArray();
  if (bytes.length === 4) return `${bytes.reverse().join(".")}.in-addr.arpa`;
  const nibbles = bytes.flatMap((byte) => [byte >> 4, byte & 15].map((nibble) => nibble.toString(16)));
  return `${nibbles.reverse().join(".")}.ip6.arpa`;
}

function toMxRecord(answer: RecordAnswer): MxRecord {
  const { exchange, preference } = answer.data as dnsPacket.MxData;
  return { exchange: exchange === "." ? "" : exchange, priority: preference ?? 0 };
}

function txtChunks(answer: RecordAnswer): Buffer[] {
  return [answer.data as dnsPacket.TxtData].flat().map((chunk) => Buffer.from(chunk));
}

type LookupSettings = { servers: ServerAddress[]; timeoutMs: number; tries: number };

/** The records of `type` for `name`, following a CNAME chain; [] for NODATA. */
async function lookUp({ servers, timeoutMs, tries }: LookupSettings, name: string, type: dnsPacket.RecordType): Promise<RecordAnswer[]> {
  const queryName = name.replace(/\.$/, "");
  if (!isValidQueryName(queryName)) throw new DnsLookupError("nxdomain", "EBADNAME", name, type);
  let lastFailure = "ETIMEOUT";
  for (let round = 0; round < tries; round++) {
    for (const server of servers) {
      let reply: WireReply;
      try {
        reply = await askServer(server, { name: queryName, type }, timeoutMs);
      } catch (error) {
        if (!(error instanceof WireError)) throw error;
        lastFailure = error.code;
        continue;
      }
      // RFC 1035 §4.1.1 RCODE. RFC 2308 §2.1: NXDOMAIN (also at the end of a CNAME chain,
      // RFC 6604 §3) means the name does not exist; NOERROR without records is NODATA.
      if (reply.rcode === "NOERROR") return recordsAlongChain(reply.answers, queryName, type);
      if (reply.rcode === "NXDOMAIN") throw new DnsLookupError("nxdomain", "ENOTFOUND", name, type);
      lastFailure = FAILURE_CODES[reply.rcode] ?? "EBADRESP";
    }
  }
  throw new DnsLookupError("temporary", lastFailure, name, type);
}

const FAILURE_CODES: Record<string, string> = { SERVFAIL: "ESERVFAIL", REFUSED: "EREFUSED", NOTIMP: "ENOTIMP", FORMERR: "EFORMERR" };

function recordsAlongChain(answers: RecordAnswer[], name: string, type: dnsPacket.RecordType): RecordAnswer[] {
  let owner = name.toLowerCase();
  // RFC 1034 §3.6.2: the answer to a name that is an alias holds the CNAME, then the target's records.
  for (let hops = 0; hops <= MAX_CNAME_CHAIN; hops++) {
    const atOwner = answers.filter((answer) => answer.name.toLowerCase() === owner);
    const matching = atOwner.filter((answer) => answer.type === type);
    if (matching.length || type === "CNAME") return matching;
    const alias = atOwner.find((answer) => answer.type === "CNAME");
    if (!alias) return [];
    owner = (alias.data as string).toLowerCase();
  }
  return [];
}

/** RFC 1035 §2.3.4: labels of 1 to 63 octets, 253 in all (without the root); ASCII only (RFC 5890 A-labels). */
function isValidQueryName(name: string): boolean {
  if (name.length === 0 || name.length > 253 || !/^[\x21-\x7e]+$/.test(name)) return false;
  return name.split(".").every((label) => label.length >= 1 && label.length <= 63);
}
