// Who a connecting peer is, for the limits one peer may hold (connections, message memory). One
// IPv6 host is handed a /64 at least (RFC 6177, RFC 7421: SLAAC needs the whole prefix), and can
// connect from any of its 2^64 addresses: counted one by one, a single host would pass every cap.
import { isIPv4 } from "node:net";
import ipaddr from "ipaddr.js";

/** An IPv4 address as it is; an IPv6 address as its /64 (`2001:db8:1:2::/64`); IPv4-mapped IPv6 as the IPv4 address. */
export function peerGroup(address: string): string {
  // Most peers: the runtime's own check, without ipaddr.js's parse (several µs, on every connect and message).
  if (isIPv4(address)) return address;
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...prefix, 0, 0, 0, 0]).toString()}/64`;
}
