/** Checks of account input that TypeBox cannot express (aliases, trimming); each error names its field. */
import { invalid } from "../errors";
import { normalizeAddress } from "../mail/address";
import { isHeaderSafe } from "../mail/header-text";

/** A trimmed, non-empty string of at most `maxLength` characters. */
export function requiredText(field: string, value: string | undefined, maxLength: number): string {
  if (value === undefined) throw invalid(`${field}: is required`);
  const trimmed = value.trim();
  if (!trimmed) throw invalid(`${field}: must not be empty`);
  if (trimmed.length > maxLength) throw invalid(`${field}: must be at most ${maxLength} characters`);
  return trimmed;
}

/** As requiredText, for a name shown as one line wherever it appears (the console, an organization's name): no line breaks, as in header text. */
export function requiredName(field: string, value: string | undefined, maxLength: number): string {
  const name = requiredText(field, value, maxLength);
  if (!isHeaderSafe(name)) throw invalid(`${field}: must not contain line breaks or control characters`);
  return name;
}

/** The email an account is known by, lower-cased (emails compare case-insensitively). */
export function accountEmail(field: string, value: string | undefined): string {
  const email = normalizeAddress(requiredText(field, value, 254));
  if (!email) throw invalid(`${field}: must be an email address`);
  return email;
}
