/**
 * The address of the client a request comes from, for the per-address login and registration
 * limits. Normally the TCP peer. Behind a reverse proxy (TLS termination, as most deployments put
 * in front of the API) every peer is the proxy; when the peer is one of INBOXD_TRUSTED_PROXIES,
 * the client is the last address of X-Forwarded-For that is not itself a trusted proxy (each
 * proxy appends the address it saw, so only the entries that trusted proxies added can be
 * believed; a client can write anything before them).
 */
import ipaddr from "ipaddr.js";

export type TrustedProxies = (address: string) => boolean;

/** Matches addresses against a list of IP addresses and CIDR ranges (as INBOXD_TRUSTED_PROXIES holds them). */
export function trustedProxies(entries: string[]): TrustedProxies {
  const ranges = entries.map((entry) => (entry.includes("/") ? ipaddr.parseCIDR(entry) : hostRange(entry)));
  return (address) => {
    if (ranges.length === 0 || !ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    return ranges.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits));
  };
}

function hostRange(address: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  const ip = ipaddr.process(address);
  return [ip, ip.kind() === "ipv4" ? 32 : 128];
}

/** The client's address: the peer, or what trusted proxies say of the client in X-Forwarded-For. */
export function clientAddress(peer: string | undefined, forwardedFor: string | null, trusted: TrustedProxies): string | undefined {
  if (!peer || !forwardedFor || !trusted(peer)) return peer;
  const hops = forwardedFor.split(",").map((hop) => hop.trim());
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (!ipaddr.isValid(hop)) return peer;
    if (!trusted(hop)) return hop;
  }
  return peer;
}
