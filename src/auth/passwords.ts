/**
 * Passwords: length rules, and argon2id hashing through Bun.password (RFC 9106). The parameters
 * are OWASP's first recommendation for argon2id (19 MiB, 2 passes, 1 lane): about 40 ms per
 * check on one core, and small enough in memory for a small VPS answering several logins at once.
 * Each hash string carries its own parameters, so changing them later keeps old hashes valid.
 */
import { invalid } from "../errors";

export const argon2idParameters = { algorithm: "argon2id", memoryCost: 19_456, timeCost: 2 } as const;

export const passwordMinLength = 8;
/** Long enough for any passphrase or manager-generated secret; refuses megabyte "passwords" before hashing. */
export const passwordMaxLength = 1024;

/**
 * Throws 422 for a password too long to be worth hashing: a login can refuse it before any work.
 * Counted in code points, as the minimum is (an emoji is one character, two UTF-16 units); a
 * string of more than twice as many units holds more code points anyway, and is not counted.
 */
export function refuseOverlongPassword(password: string) {
  if (password.length > 2 * passwordMaxLength || [...password].length > passwordMaxLength) throw invalid(`password: must be at most ${passwordMaxLength} characters`);
}

/** Throws 422 naming the field unless a new password's length is within the rules (minimum in code points). */
export function checkNewPassword(password: string) {
  if ([...password].length < passwordMinLength) throw invalid(`password: must be at least ${passwordMinLength} characters`);
  refuseOverlongPassword(password);
}

/** NFKC first (NIST SP 800-63B §5.1.1.2), so one password typed on different keyboards hashes alike. */
const canonical = (password: string) => password.normalize("NFKC");

export const hashPassword = (password: string) => Bun.password.hash(canonical(password), argon2idParameters);

export const verifyPassword = (password: string, hash: string) => Bun.password.verify(canonical(password), hash);

/**
 * The hash of a random password nobody kept, with argon2idParameters (a test holds the two
 * alike). Fixed rather than made on first use: making it would cost the first login for an
 * unknown email a second hash's time, which tells that the email is unknown.
 */
export const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$AD8T1od3djmixVAodMrRjGNIQ3TI+mi3WvwUuEnUxAY$wxHHprCNBuf7i1Lulk6kqefsdAMWzcta2xGMIBZKLWU";

/**
 * Spends the time of one real check when there is no user to check against, so a login for an
 * unknown email takes as long as one with a wrong password. Always false.
 */
export async function verifyAgainstDummy(password: string): Promise<false> {
  await verifyPassword(password, dummyHash);
  return false;
}
