/** Checks of account input that TypeBox cannot express (aliases, trimming); each error names its field. */
import { invalid } from "../errors";
import { normalizeAddress } from "../mail/address";

/** A trimmed, non-empty string of at most `maxLength` characters. */
export function requiredText(field: string, value: string | undefined, maxLength: number): string {
  if (value === undefined) throw invalid(`${field}: is required`);
  const trimmed = value.trim();
  if (!trimmed) throw invalid(`${field}: must not be empty`);
  if (trimmed.length > maxLength) throw invalid(`${field}: must be at most ${maxLength} characters`);
  return trimmed;
}

/** The email an account is known by, lower-cased (emails compare case-insensitively). */
export function accountEmail(field: string, value: string | undefined): string {
  const email = normalizeAddress(requiredText(field, value, 254));
  if (!email) throw invalid(`${field}: must be an email address`);
  return email;
}
