/** A custom domain's name as inboxd stores and compares it. */
import { domainToASCII } from "node:url";
import { isValidDomainName } from "../mail/address";

/**
 * ASCII (IDN U-labels become A-labels, RFC 5890 §2.3.2.1), lower-case, without the root dot;
 * null for anything that is not a host name mail can be addressed to.
 */
export function normalizeDomainName(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, "");
  // Only letters, digits, hyphens and dots of ASCII get to domainToASCII, which parses its input as
  // a URL host: it would drop tabs, cut "example.com/path" to example.com, and decode %41.
  if (trimmed.length === 0 || trimmed.length > 1024 || /[\x00-\x2c\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed);
  return ascii && isValidDomainName(ascii) ? ascii : null;
}

export const isSameOrSubdomain = (name: string, parent: string) => name === parent || name.endsWith(`.${parent}`);
