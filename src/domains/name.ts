/** A custom domain's name as inboxd stores and compares it. */
import { domainToASCII } from "node:url";
import { isValidDomainName } from "../mail/address";

/**
 * ASCII (IDN U-labels become A-labels, RFC 5890 §2.3.2.1), lower-case, without the root dot;
 * null for anything that is not a host name mail can be addressed to.
 */
export function normalizeDomainName(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, "");
  // WHATWG's domainToASCII silently drops tabs and line breaks, which would let "exa\tmple.com" through.
  if (trimmed.length === 0 || trimmed.length > 1024 || /[\x00-\x20\x7f]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed);
  return ascii && isValidDomainName(ascii) ? ascii : null;
}

export const isSameOrSubdomain = (name: string, parent: string) => name === parent || name.endsWith(`.${parent}`);
