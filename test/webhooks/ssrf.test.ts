import { describe, expect, test } from "bun:test";
import { isForbiddenAddress, parseHostLiteral } from "../../src/net/address-policy";
import { checkWebhookUrl, resolveAndCheck } from "../../src/webhooks/ssrf";

const forbidden: [string, string][] = [
  ["0.0.0.0", "this network"],
  ["0.1.2.3", "this network"],
  ["10.0.0.1", "private 10/8"],
  ["10.255.255.255", "private 10/8"],
  ["100.64.0.1", "CGNAT"],
  ["100.127.255.254", "CGNAT"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["169.254.169.254", "link-local metadata"],
  ["172.16.0.1", "private 172.16/12"],
  ["172.31.255.255", "private 172.16/12"],
  ["192.0.0.8", "IETF protocol assignments"],
  ["192.0.2.1", "TEST-NET-1"],
  ["192.88.99.1", "6to4 relay anycast"],
  ["192.168.1.1", "private 192.168/16"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["198.51.100.7", "TEST-NET-2"],
  ["203.0.113.9", "TEST-NET-3"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["::1", "IPv6 loopback"],
  ["::", "IPv6 unspecified"],
  ["fc00::1", "ULA"],
  ["fd12:3456:789a::1", "ULA"],
  ["fe80::1", "link-local"],
  ["febf::1", "link-local"],
  ["ff02::1", "multicast"],
  ["ff0e::1", "global-scope multicast"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
  ["::ffff:a9fe:a9fe", "IPv4-mapped metadata"],
  ["::ffff:10.0.0.1", "IPv4-mapped private"],
  ["::127.0.0.1", "IPv4-compatible loopback"],
  ["::a00:1", "IPv4-compatible private"],
  ["::8.8.8.8", "IPv4-compatible, deprecated and never routed, whatever it embeds"],
  ["::ffff:0:a00:1", "IPv4-translated (SIIT)"],
  ["::ffff:0:808:808", "IPv4-translated (SIIT), whatever it embeds"],
  ["64:ff9b::a00:1", "NAT64 private"],
  ["64:ff9b::7f00:1", "NAT64 loopback"],
  ["64:ff9b::169.254.169.254", "NAT64 metadata"],
  ["64:ff9b:1::808:808", "local-use NAT64"],
  ["2002:7f00:1::1", "6to4 loopback"],
  ["2002:a00:1::", "6to4 private"],
  ["2002:c0a8:101::1", "6to4 private 192.168"],
  ["2001::1", "Teredo"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
  ["2001:2::1", "benchmarking"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation (RFC 9637)"],
  ["100::1", "discard-only"],
  ["5f00::1", "SRv6 SIDs"],
  ["fe80::1%eth0", "zone identifier"],
  ["not-an-ip", "a name"],
  ["", "empty"],
  ["1.2.3.4.5", "too many parts"],
  ["256.1.1.1", "octet out of range"],
];

const allowed = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.216.34",
  "100.63.255.255", // just below CGNAT
  "100.128.0.0", // just above CGNAT
  "172.15.255.255", // just below 172.16/12
  "172.32.0.0", // just above 172.16/12
  "192.0.1.1", // between 192.0.0/24 and TEST-NET-1
  "198.20.0.1", // above benchmarking
  "223.255.255.255", // below multicast
  "2606:4700:4700::1111",
  "2a00:1450:4001:80b::200e",
  "::ffff:8.8.8.8", // IPv4-mapped public
  "64:ff9b::808:808", // NAT64 of a public address
  "2002:808:808::1", // 6to4 of a public address
];

// Every spelling a WHATWG URL parser turns into the same IPv4 address.
const spellings: Record<string, string[]> = {
  "127.0.0.1": ["127.0.0.1", "2130706433", "0x7f000001", "017700000001", "0177.0.0.1", "0x7f.0.0.1", "0x7f.1", "127.1", "127.0.1", "0x7F.0x0.0x0.0x1", "127.0.0.1.", "%31%32%37.0.0.1", "１２７.０.０.１"],
  "10.0.0.1": ["10.0.0.1", "167772161", "0xa000001", "012.0.0.1", "0xa.0.0.1", "10.1", "10.0.1", "012.1", "0xa.1"],
  "169.254.169.254": ["169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "0xa9.0xfe.0xa9.0xfe", "169.16689662", "169.254.43518", "0xa9.254.0xa9fe", "025177524776"],
};

describe("isForbiddenAddress", () => {
  for (const [address, why] of forbidden) {
    test(`refuses ${address || "(empty)"}: ${why}`, () => expect(isForbiddenAddress(address)).toBe(true));
  }
  for (const address of allowed) {
    test(`allows ${address}`, () => expect(isForbiddenAddress(address)).toBe(false));
  }
  for (const [canonical, forms] of Object.entries(spellings)) {
    for (const form of forms) {
      test(`refuses ${form} (${canonical})`, () => expect(isForbiddenAddress(form)).toBe(true));
    }
  }
  test("accepts bracketed IPv6", () => {
    expect(isForbiddenAddress("[::1]")).toBe(true);
    expect(isForbiddenAddress("[2606:4700:4700::1111]")).toBe(false);
  });
});

describe("parseHostLiteral", () => {
  for (const [canonical, forms] of Object.entries(spellings)) {
    for (const form of forms) {
      test(`${form} is ${canonical}`, () => expect(parseHostLiteral(form)).toBe(canonical));
    }
  }
  test.each([
    ["[::1]", "::1"],
    ["::1", "::1"],
    ["[::ffff:127.0.0.1]", "::ffff:7f00:1"],
    ["[0:0:0:0:0:0:0:1]", "::1"],
    ["[64:FF9B::A00:1]", "64:ff9b::a00:1"],
  ])("IPv6 %s is %s", (host, canonical) => expect(parseHostLiteral(host)).toBe(canonical));
  test.each(["example.com", "localhost", "1.2.3.4.5", "09.0.0.1", "4294967296", "[::1]:80", "127.0.0.1:80", "user@127.0.0.1", "127.0.0.1/x", "a.b.c.0x", "0x7f.example"])(
    "%s is no address literal",
    (host) => expect(parseHostLiteral(host)).toBeNull(),
  );
});

describe("checkWebhookUrl", () => {
  const refused: [string, string][] = [
    ["not a url", "absolute"],
    ["/relative/path", "absolute"],
    ["http://example.com/hook", "https"],
    ["ftp://example.com/hook", "https"],
    ["https://user:pass@example.com/hook", "credentials"],
    ["https://user@example.com/hook", "credentials"],
    ["https://:pass@example.com/hook", "credentials"],
    ["https://localhost/hook", "localhost"],
    ["https://LOCALHOST./hook", "localhost"],
    ["https://app.localhost/hook", "localhost"],
    ["https://[::1]/hook", "private"],
    ["https://[::ffff:127.0.0.1]/hook", "private"],
    ["https://[::ffff:7f00:1]/hook", "private"],
    ["https://[64:ff9b::a00:1]/hook", "private"],
    ["https://[fe80::1]/hook", "private"],
    ["https://0.0.0.0/hook", "private"],
    ["https://192.168.0.10:8443/hook", "private"],
  ];
  for (const [url, reason] of refused) {
    test(`refuses ${url}`, () => {
      const result = checkWebhookUrl(url, false);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toContain(reason);
    });
  }
  for (const [canonical, forms] of Object.entries(spellings)) {
    for (const form of forms) {
      test(`refuses https://${form}/ (${canonical})`, () => expect(checkWebhookUrl(`https://${form}/hook`, false).ok).toBe(false));
    }
  }
  test.each([
    "https://example.com/hook",
    "https://hooks.example.com:8443/a/b?c=d",
    "https://8.8.8.8/hook",
    "https://[2606:4700:4700::1111]/hook",
    "https://does-not-resolve.invalid/hook",
    "https://intranet/hook",
  ])("accepts %s", (url) => {
    const result = checkWebhookUrl(url, false);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.url.href).toBe(new URL(url).href);
  });

  test("allowPrivate lifts the address checks and allows http", () => {
    for (const url of ["http://localhost:3000/hook", "http://127.0.0.1:8080/", "https://[::1]/hook", "http://10.0.0.1/"]) {
      expect(checkWebhookUrl(url, true).ok).toBe(true);
    }
  });
  test("allowPrivate still refuses other schemes and credentials", () => {
    expect(checkWebhookUrl("ftp://127.0.0.1/", true).ok).toBe(false);
    expect(checkWebhookUrl("http://u:p@127.0.0.1/", true).ok).toBe(false);
    expect(checkWebhookUrl("127.0.0.1/hook", true).ok).toBe(false);
  });
});

describe("resolveAndCheck", () => {
  const dns = (answers: Record<string, string[]>) => {
    const asked: string[] = [];
    const lookup = async (host: string) => {
      asked.push(host);
      const found = answers[host];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
      return found;
    };
    return { lookup, asked };
  };

  test("returns the public addresses a name resolves to", async () => {
    const { lookup } = dns({ "hooks.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"] });
    expect(await resolveAndCheck("hooks.example.com", lookup, false)).toEqual({
      ok: true,
      addresses: ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    });
  });

  test("refuses a name that resolves to a private address (DNS rebinding)", async () => {
    const { lookup } = dns({ "rebind.example.com": ["127.0.0.1"] });
    const result = await resolveAndCheck("rebind.example.com", lookup, false);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain("127.0.0.1");
  });

  test("refuses a mixed answer even when a public address comes first", async () => {
    const { lookup } = dns({ "mixed.example.com": ["93.184.216.34", "169.254.169.254"] });
    expect((await resolveAndCheck("mixed.example.com", lookup, false)).ok).toBe(false);
  });

  test.each(["::ffff:127.0.0.1", "::1", "fd00::1", "64:ff9b::a00:1", "10.1.2.3"])("refuses an answer of %s", async (answer) => {
    const { lookup } = dns({ "x.example.com": [answer] });
    expect((await resolveAndCheck("x.example.com", lookup, false)).ok).toBe(false);
  });

  test("refuses an answer that is not an address", async () => {
    const { lookup } = dns({ "odd.example.com": ["evil.example.net"] });
    expect((await resolveAndCheck("odd.example.com", lookup, false)).ok).toBe(false);
  });

  test("refuses a name that does not resolve, or resolves to nothing", async () => {
    const { lookup } = dns({ "empty.example.com": [] });
    const missing = await resolveAndCheck("missing.example.com", lookup, false);
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.reason).toContain("ENOTFOUND");
    expect((await resolveAndCheck("empty.example.com", lookup, false)).ok).toBe(false);
  });

  test("checks an address literal without asking DNS", async () => {
    const { lookup, asked } = dns({});
    expect(await resolveAndCheck("[::1]", lookup, false)).toMatchObject({ ok: false });
    expect(await resolveAndCheck("0x7f.1", lookup, false)).toMatchObject({ ok: false });
    expect(await resolveAndCheck("8.8.8.8", lookup, false)).toEqual({ ok: true, addresses: ["8.8.8.8"] });
    expect(await resolveAndCheck("[2606:4700:4700::1111]", lookup, false)).toEqual({ ok: true, addresses: ["2606:4700:4700::1111"] });
    expect(asked).toEqual([]);
  });

  test("refuses localhost names without asking DNS", async () => {
    const { lookup, asked } = dns({ localhost: ["8.8.8.8"], "a.localhost": ["8.8.8.8"] });
    expect((await resolveAndCheck("localhost", lookup, false)).ok).toBe(false);
    expect((await resolveAndCheck("a.localhost.", lookup, false)).ok).toBe(false);
    expect(asked).toEqual([]);
  });

  test("allowPrivate returns private answers", async () => {
    const { lookup } = dns({ localhost: ["127.0.0.1", "::1"] });
    expect(await resolveAndCheck("localhost", lookup, true)).toEqual({ ok: true, addresses: ["127.0.0.1", "::1"] });
    expect(await resolveAndCheck("127.0.0.1", lookup, true)).toEqual({ ok: true, addresses: ["127.0.0.1"] });
  });

  test("normalises answers to canonical text", async () => {
    const { lookup } = dns({ "v6.example.com": ["2606:4700:4700:0:0:0:0:1111"] });
    expect(await resolveAndCheck("v6.example.com", lookup, false)).toEqual({ ok: true, addresses: ["2606:4700:4700::1111"] });
  });
});
