/**
 * Allow and block lists (docs/api.md, "Access rules"): what one entry matches, and how the entries
 * that apply to an inbox decide on an address. Pure: the store and the SMTP and send paths bring
 * the entries and the addresses.
 *
 * The rule, for one direction and one inbox, with the organization's entries and the inbox's own
 * together: a block entry that matches refuses, whatever the allow entries say; otherwise, when
 * there is at least one allow entry, only an address that one of them matches passes; with no
 * entries at all, everything passes.
 */
import { isSameOrSubdomain, normalizeDomainName } from "../domains/name";
import { baseAddress, parseAddress, parseInternationalAddress } from "../mail/address";

export const accessDirections = ["receive", "send"] as const;
export type AccessDirection = (typeof accessDirections)[number];
export const accessActions = ["allow", "block"] as const;
export type AccessAction = (typeof accessActions)[number];

export type RuleValueKind = "address" | "domain";

/** An entry as the decision reads it. */
export interface AccessEntry {
  id: string;
  inboxId: string | null;
  action: AccessAction;
  value: string;
}

/**
 * The stored form of an entry: a bare address (lower-case, its domain in A-labels; a local part in
 * UTF-8 in NFC, as a received sender's is shown) or a domain name (lower-case A-labels, no root
 * dot); null for anything else (a display name, a wildcard, a URL, a lone label).
 */
export function normalizeRuleValue(input: string): { kind: RuleValueKind; value: string } | null {
  const trimmed = input.trim();
  if (trimmed.includes("@")) {
    const parsed = parseAddress(trimmed) ?? parseInternationalAddress(trimmed);
    return parsed ? { kind: "address", value: parsed.address.toLowerCase() } : null;
  }
  const domain = normalizeDomainName(trimmed);
  return domain ? { kind: "domain", value: domain } : null;
}

export const ruleValueKind = (value: string): RuleValueKind => (value.includes("@") ? "address" : "domain");

/**
 * Whether the entry matches `address`: an address entry matches that address in any case, and a
 * `+tag` of it (ada@example.com matches ada+news@example.com, while ada+news@example.com matches
 * only itself); a domain entry matches every address on that domain or on a subdomain of it.
 */
export function entryMatches(value: string, address: string): boolean {
  // A sender's address may have a UTF-8 local part (RFC 6531): a domain entry matches it too.
  const parsed = parseAddress(address) ?? parseInternationalAddress(address);
  if (ruleValueKind(value) === "domain") {
    // An envelope address the parser refuses is still on its domain: a local part over RFC 5321's
    // 64 octets (§4.5.3.1.1), as SRS and VERP return paths have, let a blocked domain's sender in.
    const domain = parsed ? parsed.domain : address.includes("@") && normalizeDomainName(address.slice(address.lastIndexOf("@") + 1));
    return !!domain && isSameOrSubdomain(domain, value);
  }
  return !!parsed && (parsed.address.toLowerCase() === value || baseAddress(parsed.address) === value);
}

export type AccessDecision = { pass: true } | { pass: false; blockedBy: AccessEntry } | { pass: false; notAllowed: true };

/**
 * The decision on a party known by one or more addresses (a sender by its envelope and From
 * addresses): refused when a block entry matches any of them; else, with allow entries, passed
 * only when one matches any of them.
 */
export function decide(entries: readonly AccessEntry[], addresses: readonly string[]): AccessDecision {
  const blockedBy = matchingEntry(entries, "block", addresses);
  if (blockedBy) return { pass: false, blockedBy };
  if (entries.some((entry) => entry.action === "allow") && !matchingEntry(entries, "allow", addresses)) return { pass: false, notAllowed: true };
  return { pass: true };
}

/** The first entry of that action matching any of the addresses (a block can be decided before the whole sender is known). */
export const matchingEntry = (entries: readonly AccessEntry[], action: AccessAction, addresses: readonly string[]): AccessEntry | undefined =>
  entries.find((entry) => entry.action === action && addresses.some((address) => entryMatches(entry.value, address)));
