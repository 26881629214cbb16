// DKIM key pairs and their DNS records: one RSA and one Ed25519 key per generation, so that a
// verifier that knows only RSA (RFC 8301) and one that prefers Ed25519 (RFC 8463) both find a key.
import { generateKeyPair, type KeyObject } from "node:crypto";
import { promisify } from "node:util";

export type DkimAlgorithm = "rsa-sha256" | "ed25519-sha256";

/** A key's place in a rotation: pending until its record verifies, active while it signs, retired once a newer key of its algorithm is active. */
export type DkimKeyStatus = "pending" | "active" | "retired";

export type DkimKey = {
  selector: string;
  algorithm: DkimAlgorithm;
  privateKeyPem: string;
  /** The p= value: SPKI DER for RSA (RFC 6376 §3.6.1), the raw 32-byte key for Ed25519 (RFC 8463 §4). */
  publicKeyBase64: string;
};

// RFC 8301 §3.2: at least 1024 bits, 2048 recommended; longer keys outgrow one UDP DNS answer for some resolvers.
const RSA_MODULUS_BITS = 2048;
const generate = promisify(generateKeyPair);

/**
 * Selector naming: "inboxd" + the UTC date as YYYYMMDD + "r" (RSA) or "e" (Ed25519) + the
 * optional `rotation` suffix, e.g. inboxd20260314r and inboxd20260314e; a second rotation on
 * the same day passes a suffix ("2" gives inboxd20260314r2). A new selector for each key lets
 * the old record stay published while mail signed with it is still in flight.
 */
export function dkimSelector(now: Date, algorithm: DkimAlgorithm, rotation = ""): string {
  if (!/^[a-z0-9]*$/.test(rotation)) throw new Error(`DKIM selector suffix must be lower-case letters and digits, got "${rotation}"`);
  const date = now.toISOString().slice(0, 10).replaceAll("-", "");
  return `inboxd${date}${algorithm === "rsa-sha256" ? "r" : "e"}${rotation}`;
}

/** A new RSA-2048 key and a new Ed25519 key, RSA first. */
export async function generateDkimKeys(now: Date, rotation = ""): Promise<DkimKey[]> {
  const rsa = await generate("rsa", { modulusLength: RSA_MODULUS_BITS });
  const ed25519 = await generate("ed25519");
  return [
    {
      selector: dkimSelector(now, "rsa-sha256", rotation),
      algorithm: "rsa-sha256",
      privateKeyPem: pkcs8Pem(rsa.privateKey),
      publicKeyBase64: rsa.publicKey.export({ type: "spki", format: "der" }).toString("base64"),
    },
    {
      selector: dkimSelector(now, "ed25519-sha256", rotation),
      algorithm: "ed25519-sha256",
      privateKeyPem: pkcs8Pem(ed25519.privateKey),
      // RFC 8463 §4: p= is the bare 32-byte public key, which a JWK carries as x.
      publicKeyBase64: Buffer.from(ed25519.publicKey.export({ format: "jwk" }).x ?? "", "base64url").toString("base64"),
    },
  ];
}

/** The TXT record at <selector>._domainkey.<domain> (RFC 6376 §3.6.1, RFC 8463 §4). */
export function dkimTxtValue(key: Pick<DkimKey, "algorithm" | "publicKeyBase64">): string {
  const keyType = key.algorithm === "rsa-sha256" ? "rsa" : "ed25519";
  return `v=DKIM1; k=${keyType}; p=${key.publicKeyBase64}`;
}

function pkcs8Pem(privateKey: KeyObject): string {
  return privateKey.export({ type: "pkcs8", format: "pem" }).toString();
}
