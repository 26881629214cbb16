// Standard Webhooks signatures (standardwebhooks.com, "Verifying webhook
// authenticity"): receivers verify them with any of that project's libraries.
import { createHmac, randomBytes } from "node:crypto";

const SECRET_PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

// `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's
// base64-decoded bytes (not its text), as the reference libraries do.
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const encodedKey = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : "";
  // Buffer's base64 decoder skips characters it does not know; a mangled
  // secret would silently sign with another key.
  if (!BASE64.test(encodedKey)) throw new Error("webhook secret must be whsec_ followed by base64");
  if (!Number.isSafeInteger(timestampSeconds)) throw new Error("webhook timestamp must be whole seconds");
  const mac = createHmac("sha256", Buffer.from(encodedKey, "base64"))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest("base64");
  return `v1,${mac}`;
}

// 32 random bytes: the standard asks for 24 to 64 (192 to 512 bits).
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}
