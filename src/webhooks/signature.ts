// Standard Webhooks signatures (standardwebhooks.com, "Verifying webhook
// authenticity"): receivers verify them with any of that project's libraries.
import { randomBytes } from "node:crypto";

const SECRET_PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

// `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's
// base64-decoded bytes (not its text), as the reference libraries do.
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  return signWithKey(webhookSigningKey(secret), id, timestampSeconds, body);
}

// The HMAC key of a secret: decoded once per webhook by the queue, not once per try.
export function webhookSigningKey(secret: string): Buffer {
  const encodedKey = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : "";
  // Buffer's base64 decoder skips characters it does not know; a mangled
  // secret would silently sign with another key.
  if (!BASE64.test(encodedKey)) throw new Error("webhook secret must be whsec_ followed by base64");
  return Buffer.from(encodedKey, "base64");
}

export function signWithKey(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  if (!Number.isSafeInteger(timestampSeconds)) throw new Error("webhook timestamp must be whole seconds");
  // Bun's native HMAC: it costs about half of node:crypto's createHmac per delivery.
  return `v1,${new Bun.CryptoHasher("sha256", key).update(`${id}.${timestampSeconds}.`).update(body).digest("base64")}`;
}

// 32 random bytes: the standard asks for 24 to 64 (192 to 512 bits).
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}
