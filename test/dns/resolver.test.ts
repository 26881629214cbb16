import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as dns from "node:dns";
import { createResolver, DnsLookupError, isNullMx, type Resolver } from "../../src/dns/resolver";
import { ConfigError, loadConfig } from "../../src/config";
import { startDnsServer, type DnsServer } from "../peers/dns-server";

let server: DnsServer;
let resolver: Resolver;

beforeAll(async () => {
  server = await startDnsServer();
  // One try, so that a single injected failure reaches the caller.
  resolver = createResolver([server.address], { timeoutMs: 300, tries: 1 });
});
afterAll(() => server.close());

async function lookupError(lookup: Promise<unknown>): Promise<DnsLookupError> {
  const error = await lookup.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof DnsLookupError)) throw new Error(`expected a DnsLookupError, got ${String(error)}`);
  return error;
}

describe("MX", () => {
  test("returns exchanges and priorities as published, leaving the order to the caller", async () => {
    server.set("mx.example.test", "MX", [
      { exchange: "backup.example.test", priority: 20 },
      { exchange: "mail.example.test", priority: 10 },
    ]);
    const records = await resolver.mx("mx.example.test");
    expect(records.toSorted((x, y) => x.priority - y.priority)).toEqual([
      { exchange: "mail.example.test", priority: 10 },
      { exchange: "backup.example.test", priority: 20 },
    ]);
    expect(isNullMx(records)).toBe(false);
  });

  test("a null MX (RFC 7505) comes back as one record with an empty exchange", async () => {
    server.set("nomail.example.test", "MX", [{ exchange: ".", priority: 0 }]);
    const records = await resolver.mx("nomail.example.test");
    expect(records).toEqual([{ exchange: "", priority: 0 }]);
    expect(isNullMx(records)).toBe(true);
  });

  test("a name without MX gives [] (NODATA), which is not a null MX", async () => {
    server.set("web-only.example.test", "A", ["192.0.2.10"]);
    const records = await resolver.mx("web-only.example.test");
    expect(records).toEqual([]);
    expect(isNullMx(records)).toBe(false);
  });

  test("a name that does not exist is a permanent nxdomain error", async () => {
    const error = await lookupError(resolver.mx("missing.example.test"));
    expect(error.kind).toBe("nxdomain");
    expect(error.code).toBe("ENOTFOUND");
  });
});

describe("A, AAAA and CNAME", () => {
  test("NODATA is [] for every type", async () => {
    server.set("only-txt.example.test", "TXT", ["hello"]);
    expect(await resolver.a("only-txt.example.test")).toEqual([]);
    expect(await resolver.aaaa("only-txt.example.test")).toEqual([]);
    expect(await resolver.mx("only-txt.example.test")).toEqual([]);
    server.set("only-a.example.test", "A", ["192.0.2.1"]);
    expect(await resolver.txt("only-a.example.test")).toEqual([]);
  });

  test("a CNAME is followed to the target's records", async () => {
    server.set("target.example.test", "A", ["192.0.2.20"]);
    server.set("target.example.test", "TXT", ["v=spf1 -all"]);
    server.set("alias.example.test", "CNAME", ["target.example.test"]);
    expect(await resolver.a("alias.example.test")).toEqual(["192.0.2.20"]);
    expect(await resolver.txt("alias.example.test")).toEqual(["v=spf1 -all"]);
  });

  test("a CNAME to a missing name is NXDOMAIN; a name with names below it exists", async () => {
    server.set("dangling.example.test", "CNAME", ["nowhere.example.test"]);
    expect((await lookupError(resolver.a("dangling.example.test"))).kind).toBe("nxdomain");
    server.set("host.parent.example.test", "A", ["192.0.2.21"]);
    expect(await resolver.a("parent.example.test")).toEqual([]);
  });

  test("names are case-insensitive and may end with a dot", async () => {
    server.set("Mixed.Example.TEST", "A", ["192.0.2.30"]);
    expect(await resolver.a("mixed.example.test.")).toEqual(["192.0.2.30"]);
  });

  test("lookupHostAddresses joins A and AAAA and passes IP literals through", async () => {
    server.set("dual.example.test", "A", ["192.0.2.40"]);
    server.set("dual.example.test", "AAAA", ["2001:db8::40"]);
    expect((await resolver.lookupHostAddresses("dual.example.test")).toSorted()).toEqual(["192.0.2.40", "2001:db8::40"]);
    expect(await resolver.lookupHostAddresses("10.0.0.1")).toEqual(["10.0.0.1"]);
    expect(await resolver.lookupHostAddresses("::1")).toEqual(["::1"]);
    expect((await lookupError(resolver.lookupHostAddresses("gone.example.test"))).kind).toBe("nxdomain");
  });

  test("lookupHostAddresses fails temporarily when one family cannot be asked", async () => {
    server.set("half.example.test", "A", ["192.0.2.50"]);
    server.failNext("half.example.test", "SERVFAIL");
    expect((await lookupError(resolver.lookupHostAddresses("half.example.test"))).kind).toBe("temporary");
  });

  test("a malformed name is refused without a query", async () => {
    const before = server.queries.length;
    const error = await lookupError(resolver.a("bad..example.test"));
    expect([error.kind, error.code]).toEqual(["nxdomain", "EBADNAME"]);
    expect((await lookupError(resolver.a(`${"x".repeat(64)}.example.test`))).code).toBe("EBADNAME");
    expect(server.queries.length).toBe(before);
  });
});

describe("TXT", () => {
  test("the character-strings of one long record are joined, records stay apart", async () => {
    // A 2048-bit DKIM key record is about 410 bytes: two character-strings on the wire.
    const dkimRecord = `v=DKIM1; k=rsa; p=${"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA".repeat(9)}`;
    server.set("sel._domainkey.example.test", "TXT", [dkimRecord, "second record"]);
    expect((await resolver.txt("sel._domainkey.example.test")).toSorted()).toEqual([dkimRecord, "second record"].toSorted());
  });

  test("a record published as several quoted strings reads as one", async () => {
    server.set("split.example.test", "TXT", [["v=spf1 ip4:192.0.2.0/24 ", "include:_spf.example.test -all"]]);
    expect(await resolver.txt("split.example.test")).toEqual(["v=spf1 ip4:192.0.2.0/24 include:_spf.example.test -all"]);
  });

  test("an answer too big for UDP is fetched again over TCP", async () => {
    const big = "x".repeat(3000);
    server.set("big.example.test", "TXT", [big]);
    expect(await resolver.txt("big.example.test")).toEqual([big]);
    const transports = server.queries.filter((query) => query.name === "big.example.test").map((query) => query.transport);
    expect(transports).toEqual(["udp", "tcp"]);
  });
});

describe("temporary failures", () => {
  test("SERVFAIL is a temporary error", async () => {
    server.set("flaky.example.test", "MX", [{ exchange: "mail.flaky.example.test", priority: 10 }]);
    server.failNext("flaky.example.test", "SERVFAIL");
    const error = await lookupError(resolver.mx("flaky.example.test"));
    expect([error.kind, error.code]).toEqual(["temporary", "ESERVFAIL"]);
    expect(await resolver.mx("flaky.example.test")).toEqual([{ exchange: "mail.flaky.example.test", priority: 10 }]);
  });

  test("REFUSED and silence are temporary errors", async () => {
    server.set("quiet.example.test", "A", ["192.0.2.60"]);
    server.failNext("quiet.example.test", "REFUSED");
    expect(await lookupError(resolver.a("quiet.example.test"))).toMatchObject({ kind: "temporary", code: "EREFUSED" });
    server.failNext("quiet.example.test", "TIMEOUT");
    expect(await lookupError(resolver.a("quiet.example.test"))).toMatchObject({ kind: "temporary", code: "ETIMEOUT" });
  });

  test("a second try, or the next server, gets past one failure", async () => {
    server.set("retry.example.test", "A", ["192.0.2.70"]);
    server.failNext("retry.example.test", "SERVFAIL");
    const patient = createResolver([server.address], { timeoutMs: 300, tries: 2 });
    expect(await patient.a("retry.example.test")).toEqual(["192.0.2.70"]);

    const closed = await startDnsServer();
    await closed.close();
    const withDeadFirst = createResolver([closed.address, server.address], { timeoutMs: 300, tries: 1 });
    expect(await withDeadFirst.a("retry.example.test")).toEqual(["192.0.2.70"]);
  });

  test("no reachable server is a temporary error", async () => {
    const closed = await startDnsServer();
    await closed.close();
    const unreachable = createResolver([closed.address], { timeoutMs: 300, tries: 1 });
    expect((await lookupError(unreachable.a("example.test"))).kind).toBe("temporary");
  });

  // Addresses whose socket cannot even be connected, which fail on this machine without a packet
  // sent: a link-local address without a scope (no route, EINVAL) and port 0.
  test.each(["[fe80::1]:53", "127.0.0.1:0"])("a server the socket cannot connect to (%s) is a temporary error at once, not an exception", async (address) => {
    const uncaught: unknown[] = [];
    const record = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", record);
    try {
      const unroutable = createResolver([address], { timeoutMs: 2000, tries: 1 });
      const error = await lookupError(unroutable.mx("example.test"));
      expect(error).toMatchObject({ kind: "temporary", code: "ECONNREFUSED" });
    } finally {
      process.off("uncaughtException", record);
    }
    expect(uncaught).toEqual([]);
  });
});

describe("forMailauth", () => {
  test("answers in dns.promises.resolve shapes: TXT as the character-strings of each record", async () => {
    server.set("ma.example.test", "TXT", [["v=spf1 ", "-all"]]);
    server.set("ma.example.test", "MX", [{ exchange: "mx.ma.example.test", priority: 5 }]);
    server.set("ma.example.test", "A", ["192.0.2.80"]);
    expect(await resolver.forMailauth("ma.example.test", "TXT")).toEqual([["v=spf1 ", "-all"]]);
    expect(await resolver.forMailauth("ma.example.test", "MX")).toEqual([{ exchange: "mx.ma.example.test", priority: 5 }] as never);
    expect(await resolver.forMailauth("ma.example.test", "A")).toEqual(["192.0.2.80"]);
  });

  test("NXDOMAIN rejects with ENOTFOUND, NODATA with ENODATA, SERVFAIL with ESERVFAIL", async () => {
    server.set("ma-empty.example.test", "A", ["192.0.2.90"]);
    await expect(resolver.forMailauth("ma-none.example.test", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    await expect(resolver.forMailauth("ma-empty.example.test", "TXT")).rejects.toMatchObject({ code: "ENODATA" });
    server.failNext("ma-empty.example.test", "SERVFAIL");
    await expect(resolver.forMailauth("ma-empty.example.test", "A")).rejects.toMatchObject({ code: "ESERVFAIL" });
  });
});

describe("the loopback DNS peer", () => {
  test("loads zone-file lines: MX, A, AAAA, CNAME and multi-string TXT in parentheses", async () => {
    server.setZoneFile(`
; what "inboxd dns" prints
zone.example.test.        3600 IN MX   10 mx.zone.example.test.
mx.zone.example.test.     3600 IN A    192.0.2.100
mx.zone.example.test.          IN AAAA 2001:db8::100
www.zone.example.test.    300  IN CNAME mx.zone.example.test.
zone.example.test.        3600 IN TXT  "v=spf1 mx -all"
_dmarc.zone.example.test. 3600 IN TXT  "v=DMARC1; p=reject; rua=mailto:dmarc@zone.example.test"
key._domainkey.zone.example.test. 3600 IN TXT ( "v=DKIM1; k=rsa; "
    "p=ABC\\"DEF" ) ; escaped quote
`);
    expect(await resolver.mx("zone.example.test")).toEqual([{ exchange: "mx.zone.example.test", priority: 10 }]);
    expect(await resolver.lookupHostAddresses("www.zone.example.test")).toEqual(["192.0.2.100", "2001:db8::100"]);
    expect(await resolver.txt("zone.example.test")).toEqual(["v=spf1 mx -all"]);
    expect(await resolver.txt("_dmarc.zone.example.test")).toEqual(["v=DMARC1; p=reject; rua=mailto:dmarc@zone.example.test"]);
    expect(await resolver.txt("key._domainkey.zone.example.test")).toEqual(['v=DKIM1; k=rsa; p=ABC"DEF']);
  });

  test("a zone-file null MX and removed records", async () => {
    server.setZoneFile("gone.zone.example.test. IN MX 0 .");
    expect(isNullMx(await resolver.mx("gone.zone.example.test"))).toBe(true);
    server.remove("gone.zone.example.test", "MX");
    expect((await lookupError(resolver.mx("gone.zone.example.test"))).kind).toBe("nxdomain");
  });

  test("refuses a TXT character-string longer than 255 bytes", () => {
    expect(() => server.set("long.example.test", "TXT", [["y".repeat(256)]])).toThrow(/255 bytes/);
  });

  test("a client without EDNS (Bun's own resolver) gets TC over UDP and the full answer over TCP", async () => {
    const record = `v=DKIM1; k=rsa; p=${"A".repeat(700)}`;
    server.set("no-edns.example.test", "TXT", [record]);
    const builtin = new dns.promises.Resolver({ timeout: 300, tries: 1 });
    builtin.setServers([server.address]);
    // Bun 1.4.5 returns each character-string as its own record, Node one array per record:
    // joining everything holds for both shapes.
    expect((await builtin.resolveTxt("no-edns.example.test")).flat().join("")).toBe(record);
    const transports = server.queries.filter((query) => query.name === "no-edns.example.test").map((query) => query.transport);
    expect(transports).toEqual(["udp", "tcp"]);
  });
});

describe("INBOXD_DNS_SERVERS", () => {
  test("port 0 and ports above 65535 are refused at start; a host alone means port 53", () => {
    expect(() => loadConfig({ INBOXD_DNS_SERVERS: "127.0.0.1:0" })).toThrow(ConfigError);
    expect(() => loadConfig({ INBOXD_DNS_SERVERS: "127.0.0.1:65536" })).toThrow(ConfigError);
    expect(loadConfig({ INBOXD_DNS_SERVERS: "127.0.0.1, [::1]:5353" }).dnsServers).toEqual(["127.0.0.1", "[::1]:5353"]);
  });
});
