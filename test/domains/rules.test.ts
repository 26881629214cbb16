// The pure parts: names, the records to publish, how look-ups become statuses; and the SPF check
// with configured server addresses, against the loopback DNS server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config";
import { createResolver } from "../../src/dns/resolver";
import { checkSpf } from "../../src/domains/dns-checks";
import { isSameOrSubdomain, normalizeDomainName } from "../../src/domains/name";
import { spfValue } from "../../src/domains/records";
import { nextCheckAt, nextRecordCheck } from "../../src/domains/status";
import { startDnsServer, type DnsServer } from "../peers/dns-server";

describe("names", () => {
  test("normalized to lower-case ASCII without the root dot; anything else is null", () => {
    expect(normalizeDomainName(" Example.COM. ")).toBe("example.com");
    expect(normalizeDomainName("bücher.example")).toBe("xn--bcher-kva.example");
    expect(normalizeDomainName("ｅｘａｍｐｌｅ．com")).toBe("example.com");
    for (const bad of ["", ".", "example", "example.com/x", "ex%41mple.com", "a@b.example", "exa\nmple.com", "1.2.3.4", "example..com"]) expect(normalizeDomainName(bad)).toBeNull();
  });

  test("a subdomain is one below at a label boundary", () => {
    expect(isSameOrSubdomain("a.inboxd.test", "inboxd.test")).toBe(true);
    expect(isSameOrSubdomain("inboxd.test", "inboxd.test")).toBe(true);
    expect(isSameOrSubdomain("notinboxd.test", "inboxd.test")).toBe(false);
  });
});

describe("records", () => {
  test("SPF names the configured addresses, or the host name's A records", () => {
    expect(spfValue({ hostname: "mx.example", publicIps: [] })).toBe("v=spf1 a:mx.example -all");
    expect(spfValue({ hostname: "mx.example", publicIps: ["203.0.113.5", "2001:db8::5"] })).toBe("v=spf1 ip4:203.0.113.5 ip6:2001:db8::5 -all");
  });

  test("INBOXD_PUBLIC_IPS takes a comma-separated list of addresses", () => {
    expect(loadConfig({ INBOXD_PUBLIC_IPS: "203.0.113.5, 2001:db8::5" }).publicIps).toEqual(["203.0.113.5", "2001:db8::5"]);
    expect(loadConfig({}).publicIps).toEqual([]);
    expect(() => loadConfig({ INBOXD_PUBLIC_IPS: "mx.example" })).toThrow(ConfigError);
  });
});

describe("statuses", () => {
  test("a record never verified stays pending while missing; once verified, missing means failed", () => {
    const missing = { result: "missing", reason: "no MX record at a.example" } as const;
    expect(nextRecordCheck(undefined, missing)).toEqual({ status: "pending", reason: "no MX record at a.example" });
    expect(nextRecordCheck({ status: "verified" }, missing)).toEqual({ status: "failed", reason: "no longer published: no MX record at a.example" });
    expect(nextRecordCheck({ status: "failed", reason: "x" }, missing)).toEqual({ status: "failed", reason: "no MX record at a.example" });
    expect(nextRecordCheck({ status: "verified" }, { result: "unknown", reason: "SERVFAIL" })).toEqual({ status: "verified" });
    expect(nextRecordCheck(undefined, { result: "failed", reason: "wrong" })).toEqual({ status: "failed", reason: "wrong" });
  });

  test("checks are every five minutes for a day while not verified, hourly otherwise", () => {
    const day = 24 * 60 * 60_000;
    expect(nextCheckAt("pending", 0, 1000) - 1000).toBe(5 * 60_000);
    expect(nextCheckAt("failed", 0, day - 1) - (day - 1)).toBe(5 * 60_000);
    expect(nextCheckAt("pending", 0, day) - day).toBe(60 * 60_000);
    expect(nextCheckAt("verified", 0, 1000) - 1000).toBe(60 * 60_000);
  });
});

describe("SPF check with configured addresses", () => {
  let dns: DnsServer;
  beforeAll(async () => {
    dns = await startDnsServer();
  });
  afterAll(() => dns.close());

  test("every configured address must pass, through include: and redirect=", async () => {
    const resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
    const server = { hostname: "mx.unresolvable.example", publicIps: ["203.0.113.5", "2001:db8::5"] };
    dns.set("spf.example", "TXT", ["v=spf1 include:_v4.provider.example redirect=_v6.provider.example"]);
    dns.set("_v4.provider.example", "TXT", ["v=spf1 ip4:203.0.113.0/24 -all"]);
    dns.set("_v6.provider.example", "TXT", ["v=spf1 ip6:2001:db8::/32 -all"]);
    expect(await checkSpf(resolver, "spf.example", server)).toEqual({ result: "verified" });
    dns.set("_v6.provider.example", "TXT", ["v=spf1 -all"]);
    expect(await checkSpf(resolver, "spf.example", server)).toEqual({
      result: "failed",
      reason: "the SPF record of spf.example does not authorise this server's address 2001:db8::5 (result: fail)",
    });
    dns.set("spf.example", "TXT", ["v=spf1 include:nowhere.example -all"]);
    expect((await checkSpf(resolver, "spf.example", server)).result).toBe("failed");
    dns.remove("spf.example");
    expect(await checkSpf(resolver, "spf.example", server)).toEqual({ result: "missing", reason: "no SPF record at spf.example" });
  });

  test("without configured addresses and no A/AAAA for the host name, the check cannot decide", async () => {
    const resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
    dns.set("spf2.example", "TXT", ["v=spf1 a:mx.nowhere.example -all"]);
    const outcome = await checkSpf(resolver, "spf2.example", { hostname: "mx.nowhere.example", publicIps: [] });
    expect(outcome).toEqual({ result: "unknown", reason: "this server's own address is unknown: publish A/AAAA records for mx.nowhere.example or set INBOXD_PUBLIC_IPS" });
  });
});
