// Which webhook destinations inboxd may connect to: only globally routable
// unicast addresses (net/address-policy.ts), so that a webhook cannot be aimed
// at the appliance itself, its LAN or a cloud metadata service (SSRF). The
// operator setting INBOXD_WEBHOOK_ALLOW_PRIVATE lifts the address checks and
// allows http.
import { isForbiddenAddress, isLocalhostName, parseHostLiteral } from "../net/address-policy";


export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };
export type AddressCheck = { ok: true; addresses: string[] } | { ok: false; reason: string };
export type Lookup = (host: string) => Promise<string[]>;

// The check at webhook creation. A name that does not resolve (yet) passes:
// every delivery resolves again and checks the answers with resolveAndCheck.
export function checkWebhookUrl(raw: string, allowPrivate: boolean): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "url must be an absolute URL" };
  }
  const schemes = allowPrivate ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) {
    return { ok: false, reason: allowPrivate ? "url must use https or http" : "url must use https" };
  }
  if (url.username !== "" || url.password !== "") {
    return { ok: false, reason: "url must not contain credentials" };
  }
  if (allowPrivate) return { ok: true, url };
  if (isLocalhostName(url.hostname)) return { ok: false, reason: "url host must not be localhost" };
  const literal = parseHostLiteral(url.hostname);
  if (literal !== null && isForbiddenAddress(literal)) {
    return { ok: false, reason: `url host ${literal} is a private, loopback, link-local or reserved address` };
  }
  return { ok: true, url };
}

// The check before every delivery: the addresses to connect to, so that the
// connection goes to an address that was checked and not to whatever a second
// look-up answers.
export async function resolveAndCheck(host: string, lookup: Lookup, allowPrivate: boolean): Promise<AddressCheck> {
  const literal = parseHostLiteral(host);
  if (literal === null && !allowPrivate && isLocalhostName(host)) {
    return { ok: false, reason: `${host} is the local host` };
  }
  let answers: string[];
  try {
    answers = literal === null ? await lookup(host) : [literal];
  } catch (error) {
    return { ok: false, reason: `could not resolve ${host}: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (answers.length === 0) return { ok: false, reason: `${host} resolves to no address` };
  const addresses: string[] = [];
  for (const answer of answers) {
    const address = parseHostLiteral(answer);
    if (address === null) return { ok: false, reason: `${host} resolves to ${answer}, which is not an IP address` };
    addresses.push(address);
  }
  if (allowPrivate) return { ok: true, addresses };
  // One forbidden answer refuses the whole host, even beside public ones: the
  // name's owner controls the answers, and a mixed set (a public address next
  // to 127.0.0.1, or answers that change between look-ups: DNS rebinding) is
  // the way to slip a private address past a check that only looks at one.
  const forbidden = addresses.filter(isForbiddenAddress);
  if (forbidden.length > 0) {
    return { ok: false, reason: `${host} resolves to a private, loopback, link-local or reserved address (${forbidden.join(", ")})` };
  }
  return { ok: true, addresses };
}
