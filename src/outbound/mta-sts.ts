/**
 * Recipient domains' MTA-STS policies (RFC 8461 §3, §5): announced by the `_mta-sts` TXT record,
 * fetched over HTTPS from mta-sts.<domain> with a valid certificate, and cached for their max_age
 * (a changed id fetches the policy again). Without a policy, or when it cannot be had and none is
 * cached, delivery stays opportunistic: MTA-STS only ever adds requirements a domain asked for.
 */
import { rootCertificates } from "node:tls";
import type { App } from "../app";
import type { Resolver } from "../dns/resolver";
import { mxMatches, parsePolicy, policyIdOf } from "../mta-sts/parse";
import { readCertificates } from "../smtp/tls";
import { readBodyUpTo } from "../net/body";
import type { MtaStsPolicyRecord } from "../store";
import { screenAddresses, TemporaryRouteError, type Hop } from "./route";

/** §3.3: the policy is small; a larger body is no policy. */
const MAX_POLICY_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 20_000;

let trusted: { path: string; cas: string[] } | undefined;

/** The system's CAs and those of INBOXD_OUTBOUND_CA_FILE; undefined: the system's alone. */
export function outboundCas(app: App): string[] | undefined {
  const path = app.config.outboundCaFile;
  if (!path) return undefined;
  if (trusted?.path !== path) trusted = { path, cas: [...rootCertificates, readCertificates("INBOXD_OUTBOUND_CA_FILE", path)] };
  return trusted.cas;
}

/** The domain's policy now: cached, fetched anew when its id changed, or undefined when it publishes none. */
export async function recipientPolicy(app: App, resolver: Resolver, domain: string): Promise<MtaStsPolicyRecord | undefined> {
  const now = app.clock.now();
  const cached = await app.store.mtaStsPolicies.find(domain);
  const current = cached && cached.expiresAt > now ? cached : undefined;
  let id: string | undefined;
  try {
    id = policyIdOf(await resolver.txt(`_mta-sts.${domain}`));
  } catch {
    // §5.1: a record gone (or not answering) leaves a cached policy in force until it expires.
    return current;
  }
  if (!id || current?.policyId === id) return current;
  try {
    const policy = { domain, policyId: id, ...parsePolicy(await fetchPolicy(app, resolver, domain)), fetchedAt: now, expiresAt: 0 };
    policy.expiresAt = now + policy.maxAge * 1000;
    await app.store.mtaStsPolicies.save(policy);
    app.log.info("mta-sts policy fetched", { domain, mode: policy.mode, mx: policy.mxPatterns.join(","), maxAge: policy.maxAge });
    return policy;
  } catch (error) {
    app.log.warn("mta-sts policy not fetched", { domain, error: (error as Error).message, using: current ? "the cached policy" : "none" });
    return current;
  }
}

/** §3.3: GET https://mta-sts.<domain>/.well-known/mta-sts.txt, certificate checked, no redirects, 200 text/plain only. */
async function fetchPolicy(app: App, resolver: Resolver, domain: string): Promise<string> {
  const host = `mta-sts.${domain}`;
  const { allowed } = screenAddresses(await resolver.lookupHostAddresses(host), app.config.outboundAllowPrivate);
  const address = allowed[0];
  if (!address) throw new Error(`${host} has no address inboxd may connect to`);
  const url = `https://${address.includes(":") ? `[${address}]` : address}:${app.config.mtaStsPolicyPort}/.well-known/mta-sts.txt`;
  const cas = outboundCas(app);
  const response = await fetch(url, {
    headers: { host },
    redirect: "manual",
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    tls: { serverName: host, ...(cas ? { ca: cas } : {}) },
  });
  if (response.status !== 200) throw new Error(`${host} answered ${response.status}`);
  if (!(response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/plain")) throw new Error(`${host} answered with ${response.headers.get("content-type")}, not text/plain`);
  // Read up to the bound only: the domain's server could otherwise send (or inflate) an endless body until the deadline.
  const { bytes, complete, error } = await readBodyUpTo(response, MAX_POLICY_BYTES);
  if (error) throw error;
  if (!complete) throw new Error(`${host} answered more than ${MAX_POLICY_BYTES} bytes`);
  return new TextDecoder().decode(bytes);
}

/**
 * §4.1, §5: under an `enforce` policy only the MX hosts it names are tried, each over TLS with a
 * certificate valid for its name; none named is a temporary failure (the policy or the MX may be
 * corrected; the retries end in a bounce that says why).
 */
export function enforcedHops(hops: Hop[], policy: MtaStsPolicyRecord | undefined): Hop[] {
  if (policy?.mode !== "enforce") return hops;
  const matching = hops.filter((hop) => mxMatches(hop.name, policy.mxPatterns)).map((hop) => ({ ...hop, verifiedTls: true }));
  if (matching.length === 0) throw new TemporaryRouteError(`the MTA-STS policy of ${policy.domain} (mode enforce) names none of its MX hosts (${hops.map((hop) => hop.name).join(", ")} not in ${policy.mxPatterns.join(", ")})`);
  return matching;
}
