import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { createResolver, type Resolver } from "../../src/dns/resolver";
import { isHardBounce, maxTries, retryDelayMs } from "../../src/outbound/policy";
import { relayFromUrl } from "../../src/outbound/relay";
import { parseReturnPath, returnPathFor } from "../../src/outbound/return-path";
import { mxHops, UndeliverableDomainError } from "../../src/outbound/route";
import { secretBox } from "../../src/store/secret-box";
import { startDnsServer, type DnsServer } from "../peers/dns-server";

let dns: DnsServer;
let resolver: Resolver;
beforeAll(async () => {
  dns = await startDnsServer();
  resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
});
afterAll(() => dns.close());

describe("MX hops (RFC 5321 §5.1, RFC 7505)", () => {
  test("sorted by preference; equal preferences in random order", async () => {
    dns.set("pref.test", "MX", [
      { exchange: "c.pref.test", priority: 20 },
      { exchange: "a.pref.test", priority: 10 },
      { exchange: "b.pref.test", priority: 10 },
    ]);
    const names = async (randoms: number[]) => (await mxHops(resolver, "pref.test", 25, () => randoms.shift() ?? 0)).map((hop) => hop.name);
    // The random draws go to the records in published order: c, a, b.
    expect(await names([0.5, 0.1, 0.9])).toEqual(["a.pref.test", "b.pref.test", "c.pref.test"]);
    expect(await names([0.5, 0.9, 0.1])).toEqual(["b.pref.test", "a.pref.test", "c.pref.test"]);
    expect((await mxHops(resolver, "pref.test", 2525)).every((hop) => hop.port === 2525)).toBe(true);
  });

  test("no MX: the domain itself when it has an address; none at all: undeliverable", async () => {
    dns.set("implicit.test", "AAAA", ["::1"]);
    expect(await mxHops(resolver, "implicit.test", 25)).toEqual([{ name: "implicit.test", port: 25 }]);
    dns.set("bare.test", "TXT", ["v=spf1 -all"]);
    await expect(mxHops(resolver, "bare.test", 25)).rejects.toThrow(/no mail server/);
  });

  test("a null MX is undeliverable; a '.' among real hosts is skipped", async () => {
    dns.set("null.test", "MX", [{ exchange: ".", priority: 0 }]);
    await expect(mxHops(resolver, "null.test", 25)).rejects.toBeInstanceOf(UndeliverableDomainError);
    dns.set("mixed.test", "MX", [
      { exchange: ".", priority: 0 },
      { exchange: "mx.mixed.test", priority: 10 },
    ]);
    expect((await mxHops(resolver, "mixed.test", 25)).map((hop) => hop.name)).toEqual(["mx.mixed.test"]);
  });
});

describe("retry schedule and bounce classes", () => {
  test("one try more than delays; each delay with up to 10 % jitter, never less", () => {
    expect(maxTries([300, 900])).toBe(3);
    expect(retryDelayMs([300, 900], 1, () => 0)).toBe(300_000);
    expect(retryDelayMs([300, 900], 2, () => 0.999)).toBe(Math.round(900_000 * 1.0999));
    expect(retryDelayMs([300, 900], 5, () => 0)).toBe(900_000);
  });

  test.each([
    ["550 5.1.1 No such user", true],
    ["550-5.1.1 The email account does not exist", true],
    ["554 5.2.1 Mailbox disabled", true],
    ["550 No such user here", true],
    ["550 5.1.10 Recipient address has null MX", true],
    ["550 5.1.8 Sender address rejected: Domain not found", false],
    ["553 5.1.7 Bad sender address syntax", false],
    ["552 5.2.2 Mailbox full", false],
    ["552 5.3.4 Message too big", false],
    ["550 5.7.1 Rejected by policy", false],
    ["421 4.7.0 Try later", false],
  ])("%s → suppress the address: %p", (reply, hard) => {
    expect(isHardBounce(reply)).toBe(hard);
  });
});

describe("return paths", () => {
  const key = randomBytes(32);
  const app = { config: loadConfig({ INBOXD_HOSTNAME: "mx.inboxd.test", INBOXD_MAIL_DOMAIN: "inboxd.test" }), store: { tag: secretBox(key).tag } } as unknown as App;

  test("VERP: bounces+<delivery id>-<tag>@INBOXD_HOSTNAME, read back case-insensitively", () => {
    const address = returnPathFor(app, "dlv_0123abcd");
    expect(address).toMatch(/^bounces\+dlv_0123abcd-[0-9a-f]{20}@mx\.inboxd\.test$/);
    expect(parseReturnPath(app, address)).toEqual({ deliveryId: "dlv_0123abcd" });
    expect(parseReturnPath(app, `${address.toUpperCase()}.`)).toEqual({ deliveryId: "dlv_0123abcd" });
  });

  test("the tag is the key's: another id's tag, another key's, or none names no delivery", () => {
    const tagged = returnPathFor(app, "dlv_0123abcd");
    const tag = tagged.slice(tagged.indexOf("-") + 1, tagged.indexOf("@"));
    const otherKey = { ...app, store: { tag: secretBox(randomBytes(32)).tag } } as unknown as App;
    for (const address of [`bounces+dlv_0123abce-${tag}@mx.inboxd.test`, returnPathFor(otherKey, "dlv_0123abcd"), "bounces+dlv_0123abcd@mx.inboxd.test", "bounces+@mx.inboxd.test"]) {
      expect(parseReturnPath(app, address)).toEqual({ deliveryId: null });
    }
  });

  test.each(["bounces+dlv_1@inboxd.test", "bounces+dlv_1@other.test", "alice@mx.inboxd.test", "nonsense"])("%p is not one of ours", (address) => expect(parseReturnPath(app, address)).toBeNull());

  test.each(["bounces+dlv_1\r\n@mx.inboxd.test", "bounces+a/b@mx.inboxd.test"])("%p is of their form but names no delivery", (address) => expect(parseReturnPath(app, address)).toEqual({ deliveryId: null }));
});

describe("INBOXD_SMTP_RELAY", () => {
  test("credentials only over verified TLS to a remote relay; a relay on this machine may be plaintext", () => {
    expect(relayFromUrl("smtp://u%40x:p%3Aw@relay.example.com")).toEqual({ host: "relay.example.com", port: 587, tls: "required", verifyCertificate: true, auth: { user: "u@x", pass: "p:w" } });
    expect(relayFromUrl("smtps://u:p@relay.example.com")).toMatchObject({ port: 465, tls: "implicit", verifyCertificate: true });
    expect(relayFromUrl("smtp://127.0.0.1:2525")).toEqual({ host: "127.0.0.1", port: 2525, tls: "opportunistic", verifyCertificate: false, auth: undefined });
    expect(relayFromUrl("smtp://[::1]:25").host).toBe("::1");
  });
});
