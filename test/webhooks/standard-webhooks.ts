// A receiver's check of a Standard Webhooks signature (standardwebhooks.com, "Verifying webhook
// authenticity"), written from the specification with Web Crypto so that it shares no code with
// src/webhooks/signature.ts: the key is the base64 after `whsec_`, the signed content is
// `${webhook-id}.${webhook-timestamp}.${body}`, the header holds space-separated `v1,<base64>`
// signatures, and a timestamp more than 5 minutes from the receiver's clock is refused.
const toleranceSeconds = 5 * 60;

export async function verifyStandardWebhook(secret: string, headers: Record<string, string>, body: string, nowSeconds: number): Promise<boolean> {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const keyBytes = Uint8Array.from(atob(secret.replace(/^whsec_/, "")), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const entry of signatures.split(" ")) {
    const [version, value] = entry.split(",");
    if (version !== "v1" || !value) continue;
    const mac = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    if (await crypto.subtle.verify("HMAC", key, mac, signed)) return true;
  }
  return false;
}
