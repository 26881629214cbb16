// RSA signatures through the system's OpenSSL 3 (src/dkim/openssl-rsa.ts): byte for byte those of
// node:crypto (PKCS#1 v1.5 is deterministic), so that a signature never depends on which one made it.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync, sign, verify } from "node:crypto";
import { generateDkimKeys } from "../../src/dkim/keys";
import { opensslLoads, opensslRsaKey } from "../../src/dkim/openssl-rsa";
import { signMessage } from "../../src/dkim/sign";

const libcryptoMissing = !opensslLoads();
if (libcryptoMissing) console.warn("skipping the OpenSSL comparisons: libcrypto.so.3 (OpenSSL 3) is not installed here; node:crypto signs");

describe.skipIf(libcryptoMissing)("OpenSSL 3 through bun:ffi", () => {
  test.each([1024, 2048, 3072, 4096])("an RSA-%i key signs as node:crypto does, over data of many lengths", (modulusLength) => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength });
    const key = opensslRsaKey(privateKey)!;
    expect(key).toBeDefined();
    for (const length of [1, 55, 600, 4096, 100_000]) {
      const data = Buffer.alloc(length, length % 251);
      const signature = key.sign(data);
      expect(signature.equals(sign("sha256", data, privateKey))).toBe(true);
      expect(verify("sha256", data, publicKey, signature)).toBe(true);
    }
  });

  test("a subarray of a larger buffer signs only its own bytes", () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const whole = Buffer.from("header bytes|the signed part|trailer");
    const part = whole.subarray(13, 28);
    expect(opensslRsaKey(privateKey)!.sign(part).equals(sign("sha256", part, privateKey))).toBe(true);
  });

  test("an Ed25519 key is not for it", () => {
    expect(opensslRsaKey(generateKeyPairSync("ed25519").privateKey)).toBeUndefined();
  });

  test("DKIM signatures are the same bytes with either engine", async () => {
    const keys = await generateDkimKeys(new Date("2026-03-14T23:30:00Z"));
    const message = Buffer.from("From: a@engine.example.test\r\nTo: b@example.test\r\nSubject: same\r\n\r\nHello.\r\n");
    const options = { domain: "engine.example.test", keys, signTime: new Date("2026-03-15T08:00:00Z") };
    expect(signMessage(message, { ...options, rsaEngine: "auto" }).equals(signMessage(message, { ...options, rsaEngine: "builtin" }))).toBe(true);
  });
});
