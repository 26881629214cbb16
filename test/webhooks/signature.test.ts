import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { newWebhookSecret, signWebhook } from "../../src/webhooks/signature";

// The Standard Webhooks reference algorithm, written out independently: strip
// the whsec_ prefix, base64-decode the rest into the key, HMAC-SHA256 over
// `${id}.${timestamp}.${payload}`, base64, prefixed with the version `v1,`.
function referenceSignature(secret: string, id: string, timestamp: number, payload: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const toSign = Buffer.from(`${id}.${timestamp}.${payload}`, "utf8");
  return "v1," + createHmac("sha256", key).update(toSign).digest().toString("base64");
}

describe("signWebhook", () => {
  // The "sign function works" vector of the reference JavaScript library
  // (standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts).
  test("matches the Standard Webhooks reference vector", () => {
    const signature = signWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
    expect(signature).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  test("matches the reference algorithm for fresh secrets, unicode and empty bodies", () => {
    const bodies = ["", "{}", '{"event":"message.received","data":{"subject":"Grüße ✉️"}}', "x".repeat(100_000)];
    for (let round = 0; round < 20; round++) {
      const secret = newWebhookSecret();
      const id = `evt_${round}`;
      const timestamp = 1_700_000_000 + round;
      for (const body of bodies) {
        expect(signWebhook(secret, id, timestamp, body)).toBe(referenceSignature(secret, id, timestamp, body));
      }
    }
  });

  test("keys the HMAC with the decoded secret, not its text", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const keyedWithText = "v1," + createHmac("sha256", secret).update("a.1.b").digest("base64");
    expect(signWebhook(secret, "a", 1, "b")).not.toBe(keyedWithText);
  });

  test("each of id, timestamp and body changes the signature", () => {
    const secret = newWebhookSecret();
    const base = signWebhook(secret, "evt_1", 1700000000, "{}");
    expect(signWebhook(secret, "evt_2", 1700000000, "{}")).not.toBe(base);
    expect(signWebhook(secret, "evt_1", 1700000001, "{}")).not.toBe(base);
    expect(signWebhook(secret, "evt_1", 1700000000, "{ }")).not.toBe(base);
  });

  test.each(["", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_abc$def"])("refuses the secret %p", (secret) => {
    expect(() => signWebhook(secret, "evt_1", 1700000000, "{}")).toThrow();
  });

  test("refuses a timestamp that is not whole seconds", () => {
    const secret = newWebhookSecret();
    expect(() => signWebhook(secret, "evt_1", 1700000000.5, "{}")).toThrow();
    expect(() => signWebhook(secret, "evt_1", Number.NaN, "{}")).toThrow();
  });
});

describe("newWebhookSecret", () => {
  test("is whsec_ and the base64 of 32 random bytes", () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice("whsec_".length), "base64")).toHaveLength(32);
  });

  test("differs every time", () => {
    const secrets = new Set(Array.from({ length: 100 }, newWebhookSecret));
    expect(secrets.size).toBe(100);
  });
});
