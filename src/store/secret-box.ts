/**
 * Secrets at rest: webhook secrets and DKIM private keys are stored sealed with AES-256-GCM under a
 * key kept outside the database (sqlite/secret-key.ts for the embedded engine), so that a copy of the database file alone does
 * not give them away. Stored form: `enc:v1:` + base64 of IV (12 bytes), tag (16) and ciphertext.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

export const SEALED_PREFIX = "enc:v1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const SECRET_KEY_BYTES = 32;
/** What the database keeps sealed to tell, at start, whether a key is the one its secrets were sealed with. */
export const PROBE = "inboxd secret key probe";

export interface SecretBox {
  seal(plain: string): string;
  /** Throws when the value was sealed with another key (or is damaged). */
  open(stored: string): string;
  /**
   * A tag of `value` that only holders of the key (this installation's nodes) can make: HMAC-SHA256
   * (RFC 2104), in hex, under a key of its own for each `purpose`, so that no two uses of tags mix.
   */
  tag(purpose: string, value: string): string;
}

/** 32 bytes written in base64 or hex (the key file and INBOXD_SECRET_KEY); undefined for anything else. */
export function parseSecretKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : /^[A-Za-z0-9+/]{43}=?$/.test(trimmed) ? Buffer.from(trimmed, "base64") : undefined;
  return key?.length === SECRET_KEY_BYTES ? key : undefined;
}

export function secretBox(key: Buffer): SecretBox {
  return {
    seal(plain) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const ciphertext = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString("base64");
    },
    open(stored) {
      if (!stored.startsWith(SEALED_PREFIX)) throw new Error("the value is not sealed");
      const bytes = Buffer.from(stored.slice(SEALED_PREFIX.length), "base64");
      const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    },
    tag: (purpose, value) => createHmac("sha256", createHmac("sha256", key).update(`inboxd tag: ${purpose}`).digest()).update(value).digest("hex"),
  };
}

/**
 * For a store opened without the key: the read-only look-ups of `inboxd dns` and `inboxd doctor`,
 * which use public keys only. Secrets read through it stay as stored, and none may be written.
 */
export const keylessBox: SecretBox = {
  seal() {
    throw new Error("this store was opened without the secret key: it cannot store secrets");
  },
  open: (stored) => stored,
  tag() {
    throw new Error("this store was opened without the secret key: it cannot make tags");
  },
};

/** Whether `box` opens the probe, i.e. holds the key this database's secrets were sealed with. */
export function opensProbe(box: SecretBox, probe: string): boolean {
  try {
    return box.open(probe) === PROBE;
  } catch {
    return false;
  }
}
