// Mail addresses: syntax checks and the canonical forms inboxd stores and compares.
// parseAddress takes a bare addr-spec (`local@domain`) only; parseMailbox also takes the
// `Display Name <local@domain>` form people write. Address literals (`user@[192.0.2.1]`),
// groups and lists are refused by both.

import { domainToASCII } from "node:url";

export interface ParsedAddress {
  /** Local part as it goes on the wire: dot-string, or quoted only when it has to be. */
  local: string;
  /** ASCII (A-label) domain, lower-cased. */
  domain: string;
  /** `local@domain`. */
  address: string;
}

// RFC 5321 §4.5.3.1.1: a local part is at most 64 octets.
const MAX_LOCAL_LENGTH = 64;
// RFC 5321 §4.5.3.1.3 limits a path to 256 octets including the angle brackets,
// which leaves 254 for the address itself (RFC 3696 errata 1690).
const MAX_ADDRESS_LENGTH = 254;
// Written input may be longer than its canonical form (a quoted local part that
// gets unquoted, full-width characters in a domain), but never by this much.
const MAX_INPUT_LENGTH = 1024;
// RFC 1035 §2.3.4: 63 octets per label, 255 on the wire, i.e. 253 written out.
const MAX_LABEL_LENGTH = 63;
const MAX_DOMAIN_LENGTH = 253;

// RFC 5322 §3.2.3 atext; RFC 5321 §4.1.2 Dot-string = Atom *("." Atom).
const DOT_STRING = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+(?:\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+)*$/;
// RFC 5321 §4.1.2 Quoted-string: qtextSMTP (%d32-33 / %d35-91 / %d93-126) or
// quoted-pairSMTP (backslash followed by %d32-126), less "<" and ">": nodemailer writes
// them into header fields as spaces, so a message to `"a<b"@d` would name `"a b"@d`
// in its To field (found by test/fuzz/compose.test.ts). No real mailbox needs them.
const QUOTED_STRING = /^"(?:[\x20\x21\x23-\x3b\x3d\x3f-\x5b\x5d-\x7e]|\\[\x20-\x3b\x3d\x3f-\x7e])*"$/;
// RFC 5321 §4.1.2 sub-domain = Let-dig [Ldh-str]: letters, digits, inner hyphens.
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/**
 * Parses a bare addr-spec (RFC 5321 §4.1.2, RFC 5322 §3.4.1). Returns null for
 * anything that is not one address a server could be asked to deliver to.
 */
export function parseAddress(input: string): ParsedAddress | null {
  // Control characters are refused before anything else: WHATWG's domainToASCII
  // silently drops tabs and line breaks, which would turn `a@b\r\n.com` into a
  // "valid" address. The length cap bounds the work spent on hostile input.
  if (input.length > MAX_INPUT_LENGTH || /[\x00-\x1f\x7f]/.test(input)) return null;

  const at = input.lastIndexOf("@");
  if (at <= 0) return null;
  const local = canonicalLocalPart(input.slice(0, at));
  const domain = asciiDomain(input.slice(at + 1));
  if (local === null || domain === null) return null;

  const address = `${local}@${domain}`;
  if (local.length > MAX_LOCAL_LENGTH || address.length > MAX_ADDRESS_LENGTH) return null;
  return { local, domain, address };
}

// RFC 6532 §3.2: atext extended with UTF8-non-ascii, in a dot-atom; at least one character of it.
const UTF8_DOT_STRING = /^[\p{L}\p{M}\p{N}!#$%&'*+\-/=?^_`{|}~]+(?:\.[\p{L}\p{M}\p{N}!#$%&'*+\-/=?^_`{|}~]+)*$/u;

/**
 * An address of received mail whose local part holds UTF-8 (RFC 6532, `jöe@example.org`), which
 * parseAddress refuses: inboxd sends only to ASCII local parts. Kept to show who wrote a message
 * rather than nothing; the domain as parseAddress gives it, the limits counted in octets.
 */
export function parseInternationalAddress(input: string): ParsedAddress | null {
  if (input.length > MAX_INPUT_LENGTH || /[\x00-\x1f\x7f]/.test(input)) return null;
  const at = input.lastIndexOf("@");
  const local = input.slice(0, at).normalize("NFC");
  if (at <= 0 || /^[\x00-\x7f]*$/.test(local) || !UTF8_DOT_STRING.test(local)) return null;
  const domain = asciiDomain(input.slice(at + 1));
  if (domain === null) return null;
  const address = `${local}@${domain}`;
  if (Buffer.byteLength(local) > MAX_LOCAL_LENGTH || Buffer.byteLength(address) > MAX_ADDRESS_LENGTH) return null;
  return { local, domain, address };
}

/** One mailbox as a person writes it: the address, and the display name beside it when there is one. */
export interface Mailbox {
  /** Canonical address, as parseAddress gives it. */
  address: string;
  /** Display name, unquoted and trimmed; absent when there is none. */
  name?: string;
}

// A display name longer than this is no name a person reads (nodemailer would fold it anyway).
const MAX_NAME_LENGTH = 256;
// RFC 5322 §3.4 name-addr with a quoted-string display name: `"Lovelace, Ada" <ada@example.com>`.
const QUOTED_NAME_ADDR = /^"((?:[^"\\]|\\.)*)"\s*<([^<>]*)>$/;
// The same with a phrase written out: `Ada Lovelace <ada@example.com>`, or `<ada@example.com>`. The
// specials that separate list entries or groups (`,` `;` `:`) and quotes are refused outside a
// quoted string, so that `a@x.example, Bob <b@x.example>` is not taken for one mailbox named "a@x.example,".
const PLAIN_NAME_ADDR = /^([^"<>,;:\\]*)<([^<>]*)>$/;

/**
 * One mailbox (RFC 5322 §3.4): a bare addr-spec, or `Display Name <addr-spec>` with the name
 * written out or as a quoted string (`"Lovelace, Ada" <ada@example.com>`). Returns null for
 * anything else: lists, groups, comments after the address, control characters anywhere.
 */
export function parseMailbox(input: string): Mailbox | null {
  const trimmed = input.trim();
  // C1 controls and the Unicode line separators too: the name goes into the composed To or Cc
  // field, where readers show NEL (U+0085) as a line break (./header-text.ts).
  if (trimmed.length > MAX_INPUT_LENGTH || /[\x00-\x1f\x7f-\x9f\u2028\u2029]/.test(trimmed)) return null;
  if (!trimmed.includes("<")) {
    const parsed = parseAddress(trimmed);
    return parsed ? { address: parsed.address } : null;
  }
  const quoted = QUOTED_NAME_ADDR.exec(trimmed);
  const plain = quoted ? null : PLAIN_NAME_ADDR.exec(trimmed);
  const match = quoted ?? plain;
  if (!match) return null;
  const parsed = parseAddress(match[2]!.trim());
  if (!parsed) return null;
  const name = (quoted ? match[1]!.replace(/\\(.)/g, "$1") : match[1]!).trim().replace(/\s+/g, " ");
  if (name.length > MAX_NAME_LENGTH) return null;
  return name ? { address: parsed.address, name } : { address: parsed.address };
}

export function isValidAddress(input: string): boolean {
  return parseAddress(input) !== null;
}

/**
 * The form inboxd stores and compares addresses in. Local parts are compared
 * case-insensitively (RFC 5321 §2.4 leaves that to the receiving host; every
 * mailbox provider users know does so), so the whole address is lower-cased.
 */
export function normalizeAddress(input: string): string | null {
  const parsed = parseAddress(input);
  return parsed ? parsed.address.toLowerCase() : null;
}

/**
 * Normalised address without its subaddress: `a+news@d` → `a@d`
 * (RFC 5233 §1 "detail" after the `+` separator). A quoted local part is left
 * whole, as is one that starts with `+` and would otherwise become empty. A received address
 * with a local part in UTF-8 (parseInternationalAddress) has one too.
 */
export function baseAddress(input: string): string | null {
  const parsed = parseAddress(input) ?? parseInternationalAddress(input);
  if (!parsed) return null;
  const local = parsed.local.toLowerCase();
  const plus = local.startsWith('"') ? -1 : local.indexOf("+");
  const base = plus > 0 ? local.slice(0, plus) : local;
  return `${base}@${parsed.domain}`;
}

/**
 * An ASCII host name a mail domain can be: LDH labels of 1..63 octets
 * (RFC 1035 §2.3.1, RFC 1123 §2.1), at most 253 octets, at least two labels,
 * and a top-level label that is not all digits (RFC 3696 §2), which keeps
 * IPv4 addresses out. No trailing root dot.
 */
export function isValidDomainName(name: string): boolean {
  if (name.length === 0 || name.length > MAX_DOMAIN_LENGTH) return false;
  const labels = name.split(".");
  if (labels.length < 2) return false;
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return false;
  return labels.every((label) => label.length <= MAX_LABEL_LENGTH && LDH_LABEL.test(label));
}

/**
 * A dot-string is kept as written. A quoted string is unquoted when its content
 * is a valid dot-string anyway (RFC 5321 §4.1.2: a quoted form SHOULD NOT be
 * used when not needed), so `"jo"@d` and `jo@d` are the same mailbox here.
 * Non-ASCII local parts (RFC 6531 SMTPUTF8) are not accepted.
 */
function canonicalLocalPart(local: string): string | null {
  if (DOT_STRING.test(local)) return local;
  if (!QUOTED_STRING.test(local)) return null;
  const content = local.slice(1, -1).replace(/\\(.)/g, "$1");
  if (DOT_STRING.test(content)) return content;
  return `"${content.replace(/(["\\])/g, "\\$1")}"`;
}

/** IDN U-labels become A-labels (RFC 5890 §2.3.2.1); the result is lower-case. */
function asciiDomain(domain: string): string | null {
  if (domain.length === 0 || domain.startsWith("[")) return null;
  // domainToASCII parses its input as a URL host: `example.com/path` and `ex%41mple.com` would come
  // back as `example.com`. Only letters, digits, hyphens, dots and non-ASCII (U-labels) may enter it.
  if (/[\x00-\x2c\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]/.test(domain)) return null;
  const ascii = domainToASCII(domain);
  return isValidDomainName(ascii) ? ascii : null;
}
