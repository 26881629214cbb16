import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicKey } from "node:crypto";
import { authenticate, dkimVerify } from "mailauth";
import { dkimSelector, dkimTxtValue, generateDkimKeys, type DkimKey } from "../../src/dkim/keys";
import { signMessage } from "../../src/dkim/sign";
import { createResolver, type Resolver } from "../../src/dns/resolver";
import { dkimverify, dkimverifyMissing } from "../peers/dkimverify";
import { startDnsServer, type DnsServer } from "../peers/dns-server";

const DOMAIN = "sender.example.test";
const KEY_DATE = new Date("2026-03-14T23:30:00Z");
const MESSAGE = Buffer.from(
  [
    `From: Alice <alice@${DOMAIN}>`,
    "To: Bob <bob@receiver.example.test>",
    "Subject: Quarterly numbers",
    "Date: Sat, 14 Mar 2026 23:30:00 +0000",
    `Message-ID: <quarterly-1@${DOMAIN}>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    "The numbers are in.",
    "",
  ].join("\r\n"),
);

let server: DnsServer;
let resolver: Resolver;
let keys: DkimKey[];
let signed: Buffer;

beforeAll(async () => {
  server = await startDnsServer();
  resolver = createResolver([server.address], { timeoutMs: 500, tries: 1 });
  keys = await generateDkimKeys(KEY_DATE);
  for (const key of keys) server.set(`${key.selector}._domainkey.${DOMAIN}`, "TXT", [dkimTxtValue(key)]);
  signed = await signMessage(MESSAGE, { domain: DOMAIN, keys });
});
afterAll(() => server.close());

function tamperBody(message: Buffer): Buffer {
  return Buffer.from(message.toString().replace("The numbers are in.", "The numbers are out."));
}

describe("keys", () => {
  test("selectors carry the UTC date and the algorithm, plus an optional rotation suffix", () => {
    expect(keys.map((key) => [key.selector, key.algorithm])).toEqual([
      ["inboxd20260314r", "rsa-sha256"],
      ["inboxd20260314e", "ed25519-sha256"],
    ]);
    expect(dkimSelector(KEY_DATE, "ed25519-sha256", "2")).toBe("inboxd20260314e2");
    expect(() => dkimSelector(KEY_DATE, "rsa-sha256", "Bad-")).toThrow();
  });

  test("the RSA p= is a 2048-bit SubjectPublicKeyInfo, the Ed25519 p= the raw 32-byte key", () => {
    const [rsa, ed25519] = keys;
    expect(dkimTxtValue(rsa)).toBe(`v=DKIM1; k=rsa; p=${rsa.publicKeyBase64}`);
    const rsaPublic = createPublicKey({ key: Buffer.from(rsa.publicKeyBase64, "base64"), format: "der", type: "spki" });
    expect(rsaPublic.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(dkimTxtValue(ed25519)).toBe(`v=DKIM1; k=ed25519; p=${ed25519.publicKeyBase64}`);
    expect(Buffer.from(ed25519.publicKeyBase64, "base64").length).toBe(32);
  });
});

describe("signMessage", () => {
  test("prepends an RSA then an Ed25519 signature, relaxed/relaxed, over the listed fields", () => {
    const headers = signed.toString().split("\r\n\r\n")[0];
    const signatures = headers.split(/\r\n(?=\S)/).filter((line) => line.startsWith("DKIM-Signature:"));
    expect(signed.toString().startsWith("DKIM-Signature:")).toBe(true);
    expect(signed.subarray(signed.length - MESSAGE.length).equals(MESSAGE)).toBe(true);
    expect(signatures.length).toBe(2);
    const unfolded = signatures.map((signature) => signature.replace(/\r\n\s+/g, " "));
    expect(unfolded[0]).toContain("a=rsa-sha256");
    expect(unfolded[1]).toContain("a=ed25519-sha256");
    for (const signature of unfolded) {
      expect(signature).toContain("c=relaxed/relaxed");
      expect(signature).toContain(`d=${DOMAIN}`);
      const signedFields = /h=([^;]+)/.exec(signature)?.[1].replace(/\s/g, "").toLowerCase().split(":");
      // The fields present from the bottom up, then every signable name once more (oversigned: one added breaks the signature).
      const present = ["content-type", "mime-version", "message-id", "date", "subject", "to", "from"];
      const signable = ["from", "to", "cc", "subject", "date", "message-id", "mime-version", "content-type", "in-reply-to", "references", "reply-to"];
      expect(signedFields).toEqual([...present, ...signable]);
    }
  });

  test("refuses to sign without a key or without a From field", () => {
    expect(() => signMessage(MESSAGE, { domain: DOMAIN, keys: [] })).toThrow(/no DKIM key/);
    const withoutFrom = Buffer.from(MESSAGE.toString().replace(/^From: .*\r\n/, ""));
    expect(() => signMessage(withoutFrom, { domain: DOMAIN, keys })).toThrow(/DKIM signing for sender.example.test failed: the message has no From field/);
  });

  test("refuses a d= or s= value that would break out of its tag, and a key of the wrong type", () => {
    expect(() => signMessage(MESSAGE, { domain: "sender.example.test; x=1", keys })).toThrow(/cannot be a d= value/);
    expect(() => signMessage(MESSAGE, { domain: DOMAIN, keys: [{ ...keys[0], selector: "a b" }] })).toThrow(/cannot be an s= value/);
    expect(() => signMessage(MESSAGE, { domain: DOMAIN, keys: [{ ...keys[0], algorithm: "ed25519-sha256" }] })).toThrow(/an rsa key cannot make ed25519-sha256 signatures/);
  });

  test("t= is the signing time; a plain Uint8Array (a bun:sqlite BLOB) signs like a Buffer", () => {
    const signTime = new Date("2026-03-15T08:00:00Z");
    const fromBuffer = signMessage(MESSAGE, { domain: DOMAIN, keys, signTime });
    const fromBytes = signMessage(new Uint8Array(MESSAGE), { domain: DOMAIN, keys, signTime });
    expect(fromBytes.equals(fromBuffer)).toBe(true);
    expect(fromBuffer.toString()).toContain(`t=${signTime.getTime() / 1000};`);
  });

  test("long runs of whitespace cost linear time (no backtracking regular expression)", () => {
    const run = " \t".repeat(500_000);
    const hostile = Buffer.from(`From: a@${DOMAIN}\r\nX-Name${run}x${run}: v${run}x\r\nSubject: s${run}x${run}\r\n\r\n${run}x${run}x\r\n${run}\r\n`);
    const started = performance.now();
    signMessage(hostile, { domain: DOMAIN, keys });
    // Linear: well under a second here; a quadratic pass over these runs would take hours.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("the signature fields keep within 78 characters a line", () => {
    const headers = signed.toString().split("\r\n\r\n")[0]!.split("\r\n");
    expect(headers.every((line) => line.length <= 78)).toBe(true);
  });
});

describe("verification by mailauth through the loopback DNS", () => {
  test("both signatures pass", async () => {
    const result = await dkimVerify(signed, { resolver: resolver.forMailauth });
    expect(result.results.map((entry) => [entry.selector, entry.status?.result])).toEqual([
      ["inboxd20260314r", "pass"],
      ["inboxd20260314e", "pass"],
    ]);
  });

  test("a changed body fails both", async () => {
    // mailauth's lenient mode reports a body hash mismatch as neutral; strict gives RFC 8601's fail.
    const result = await dkimVerify(tamperBody(signed), { resolver: resolver.forMailauth, strict: true });
    expect(result.results.map((entry) => entry.status?.result)).toEqual(["fail", "fail"]);
  });

  test("a changed signed header fails both", async () => {
    const tampered = Buffer.from(signed.toString().replace("Subject: Quarterly numbers", "Subject: Quarterly numbers!"));
    const result = await dkimVerify(tampered, { resolver: resolver.forMailauth });
    expect(result.results.map((entry) => entry.status?.result)).toEqual(["fail", "fail"]);
  });

  test("an unpublished key is neutral (no key), a failing DNS server a temperror", async () => {
    const otherKeys = await generateDkimKeys(KEY_DATE, "unpublished");
    const unpublished = await dkimVerify(await signMessage(MESSAGE, { domain: DOMAIN, keys: otherKeys }), { resolver: resolver.forMailauth });
    expect(unpublished.results.map((entry) => [entry.status?.result, entry.status?.comment])).toEqual([
      ["neutral", "no key"],
      ["neutral", "no key"],
    ]);
    server.failNext(`${keys[0].selector}._domainkey.${DOMAIN}`, "SERVFAIL");
    const failing = await dkimVerify(signed, { resolver: resolver.forMailauth });
    expect(failing.results.map((entry) => entry.status?.result)).toEqual(["temperror", "pass"]);
  });

  test("authenticate() gives DKIM, SPF and DMARC pass from the same resolver", async () => {
    server.set(DOMAIN, "TXT", ["v=spf1 ip4:192.0.2.25 -all"]);
    server.set(`_dmarc.${DOMAIN}`, "TXT", ["v=DMARC1; p=reject"]);
    const result = await authenticate(signed, {
      ip: "192.0.2.25",
      helo: `mail.${DOMAIN}`,
      sender: `alice@${DOMAIN}`,
      mta: "mx.receiver.example.test",
      resolver: resolver.forMailauth,
    });
    expect(result.dkim.results.map((entry) => entry.status?.result)).toEqual(["pass", "pass"]);
    expect(result.spf && result.spf.status.result).toBe("pass");
    expect(result.dmarc && result.dmarc.status.result).toBe("pass");
  });
});

describe.skipIf(dkimverifyMissing !== undefined)(
  `verification by dkimverify from python3-dkim${dkimverifyMissing ? ` — skipped: ${dkimverifyMissing}` : ""}`,
  () => {
    test("both signatures pass", async () => {
      expect(await dkimverify(signed, 0, server.port)).toEqual({ exitCode: 0, output: "signature ok" });
      expect(await dkimverify(signed, 1, server.port)).toEqual({ exitCode: 0, output: "signature ok" });
    });

    test("a changed body fails both", async () => {
      expect((await dkimverify(tamperBody(signed), 0, server.port)).exitCode).toBe(1);
      expect((await dkimverify(tamperBody(signed), 1, server.port)).exitCode).toBe(1);
    });
  },
);
