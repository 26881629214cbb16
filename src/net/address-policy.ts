// Which addresses inboxd may connect to on a tenant's say-so (webhook URLs, MX hosts of the
// domains it sends to): only globally routable unicast addresses, so that neither can be aimed at
// the appliance itself, its LAN or a cloud metadata service. Pure: the settings that lift these
// checks are the callers' business.
import ipaddr from "ipaddr.js";

type Cidr<T> = [T, number];

const cidrs4 = (list: string[]): Cidr<ipaddr.IPv4>[] => list.map((cidr) => ipaddr.IPv4.parseCIDR(cidr));
const cidrs6 = (list: string[]): Cidr<ipaddr.IPv6>[] => list.map((cidr) => ipaddr.IPv6.parseCIDR(cidr));

// The non-global blocks of the IANA IPv4 Special-Purpose Address Registry (RFC 6890).
const FORBIDDEN_IPV4 = cidrs4([
  "0.0.0.0/8", // RFC 791 "this network"; Linux connects 0.0.0.0 to the local host
  "10.0.0.0/8", // RFC 1918 private
  "100.64.0.0/10", // RFC 6598 carrier-grade NAT
  "127.0.0.0/8", // RFC 1122 loopback
  "169.254.0.0/16", // RFC 3927 link-local, where cloud metadata services live
  "172.16.0.0/12", // RFC 1918 private
  "192.0.0.0/24", // RFC 6890 IETF protocol assignments
  "192.0.2.0/24", // RFC 5737 documentation (TEST-NET-1)
  "192.88.99.0/24", // RFC 7526 deprecated 6to4 relay anycast
  "192.168.0.0/16", // RFC 1918 private
  "198.18.0.0/15", // RFC 2544 benchmarking
  "198.51.100.0/24", // RFC 5737 documentation (TEST-NET-2)
  "203.0.113.0/24", // RFC 5737 documentation (TEST-NET-3)
  "224.0.0.0/4", // RFC 5771 multicast
  "240.0.0.0/4", // RFC 1112 reserved; holds 255.255.255.255, the limited broadcast (RFC 919)
]);

// RFC 4291 2.4: outside 2000::/3 lie loopback, unspecified, IPv4-compatible
// and IPv4-translated (both deprecated, never routed), unique-local (fc00::/7),
// link-local (fe80::/10), multicast (ff00::/8), local-use NAT64
// (64:ff9b:1::/48) and unassigned space.
const GLOBAL_UNICAST_IPV6 = ipaddr.IPv6.parseCIDR("2000::/3");

const FORBIDDEN_GLOBAL_IPV6 = cidrs6([
  // RFC 2928 IETF protocol assignments, with Teredo 2001::/32 (RFC 4380: its
  // client address is obfuscated and reached through relays, so it cannot be
  // checked), benchmarking 2001:2::/48 (RFC 5180) and ORCHID (RFC 7343).
  "2001::/23",
  "2001:db8::/32", // RFC 3849 documentation
  "3fff::/20", // RFC 9637 documentation
  "5f00::/16", // RFC 9602 SRv6 segment identifiers
]);

// IPv6 forms whose packets end up at an embedded IPv4 address, which is then
// the one to check; `firstPart` is the 16-bit group where it starts.
const EMBEDDED_IPV4: { cidr: Cidr<ipaddr.IPv6>; firstPart: number }[] = [
  { cidr: ipaddr.IPv6.parseCIDR("::ffff:0:0/96"), firstPart: 6 }, // RFC 4291 2.5.5.2 IPv4-mapped
  { cidr: ipaddr.IPv6.parseCIDR("64:ff9b::/96"), firstPart: 6 }, // RFC 6052 NAT64 well-known prefix
  { cidr: ipaddr.IPv6.parseCIDR("2002::/16"), firstPart: 1 }, // RFC 3056 6to4
];

// True unless `ip` is a globally routable unicast address. Anything that is not
// an IP address at all counts as forbidden: the check fails closed.
export function isForbiddenAddress(ip: string): boolean {
  const literal = parseHostLiteral(ip);
  if (literal === null) return true;
  const address = ipaddr.parse(literal);
  return address instanceof ipaddr.IPv4 ? isForbiddenIPv4(address) : isForbiddenIPv6(address);
}

function isForbiddenIPv4(address: ipaddr.IPv4): boolean {
  return FORBIDDEN_IPV4.some((cidr) => address.match(cidr));
}

function isForbiddenIPv6(address: ipaddr.IPv6): boolean {
  const embedded = EMBEDDED_IPV4.find(({ cidr }) => address.match(cidr));
  if (embedded) return isForbiddenIPv4(ipv4FromParts(address.parts, embedded.firstPart));
  if (!address.match(GLOBAL_UNICAST_IPV6)) return true;
  return FORBIDDEN_GLOBAL_IPV6.some((cidr) => address.match(cidr));
}

function ipv4FromParts(parts: number[], first: number): ipaddr.IPv4 {
  const [high, low] = [parts[first], parts[first + 1]];
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

// The canonical text of an IP address literal (dotted decimal, or RFC 5952 IPv6
// without brackets), or null for a host name or garbage. IPv4 is recognised in
// every spelling a WHATWG URL parser turns into an address (2130706433,
// 0177.0.0.1, 0x7f.1, 127.1, full-width digits, percent-encoding): that is how
// a fetch would read the host, and Bun's URL implements it exactly, so the URL
// parser itself does the recognising.
export function parseHostLiteral(host: string): string | null {
  // Characters that would make the URL parser split the string into more than a host.
  if (/[/\\?#@\s]/.test(host)) return null;
  // A bracketed literal followed by a port is a host and port, not a host.
  if (host.startsWith("[") && !host.endsWith("]")) return null;
  const bracketed = !host.startsWith("[") && host.includes(":") ? `[${host}]` : host;
  let url: URL;
  try {
    url = new URL(`http://${bracketed}/`);
  } catch {
    return null;
  }
  const hostname = url.hostname;
  if (hostname.startsWith("[")) return hostname.slice(1, -1);
  // The WHATWG serialisation of every IPv4 host is four decimal parts, and a
  // host that ends in a number is never a domain name.
  return ipaddr.IPv4.isValidFourPartDecimal(hostname) ? hostname : null;
}

export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, "");
  // RFC 6761 6.3: localhost and every name under it are the local host.
  return name === "localhost" || name.endsWith(".localhost");
}
