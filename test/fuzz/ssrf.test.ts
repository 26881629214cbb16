// Fuzz target: the webhook URL check (src/webhooks/ssrf.ts over src/net/address-policy.ts). A
// tenant writes the URL; every spelling a URL parser turns into a private address must be refused,
// public ones accepted, and nothing may make the check throw.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { isForbiddenAddress, parseHostLiteral } from "../../src/net/address-policy";
import { checkWebhookUrl, resolveAndCheck } from "../../src/webhooks/ssrf";
import { fuzz, testTimeout } from "./budget";

type Block = [first: number[], bits: number];
const octets = (address: string) => address.split(".").map(Number);
// The non-global IPv4 blocks, written out here again rather than imported: this list is the oracle.
const PRIVATE_V4: Block[] = (
  [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.0.2.0", 24],
    ["192.88.99.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["198.51.100.0", 24],
    ["203.0.113.0", 24],
    ["224.0.0.0", 4],
    ["240.0.0.0", 4],
  ] as [string, number][]
).map(([address, bits]) => [octets(address), bits]);

const toNumber = (bytes: number[]) => bytes.reduce((n, byte) => n * 256 + byte, 0);
const toBytes = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];

const privateV4 = fc.tuple(fc.constantFrom(...PRIVATE_V4), fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([[first, bits], random]) => {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return toBytes(((toNumber(first) & mask) | (random & ~mask)) >>> 0);
});
// First octets whose whole /8 is global unicast.
const PUBLIC_FIRST = [...Array(224).keys()].filter((n) => n >= 1 && ![10, 100, 127, 169, 172, 192, 198, 203].includes(n));
const publicV4 = fc.tuple(fc.constantFrom(...PUBLIC_FIRST), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }));

const hex = (n: number, digits = 0) => n.toString(16).padStart(digits, "0");
const withCase = (text: string, upper: boolean) => (upper ? text.toUpperCase() : text);

/** The WHATWG IPv4 spellings (URL Standard §3.5 "IPv4 parser"): 1 to 4 parts, each decimal, octal or hex. */
const ipv4Spelling = (bytes: number[]) =>
  fc.tuple(fc.integer({ min: 1, max: 4 }), fc.array(fc.constantFrom("dec", "oct", "hex", "HEX", "hex0"), { minLength: 4, maxLength: 4 }), fc.boolean()).map(([partCount, radixes, trailingDot]) => {
    // The last part holds the bytes the earlier parts leave: 127.1 is 127.0.0.1.
    const parts = [...bytes.slice(0, partCount - 1), toNumber(bytes.slice(partCount - 1))];
    const spelled = parts.map((value, i) => {
      switch (radixes[i]) {
        case "oct":
          return `0${value.toString(8)}`;
        case "hex":
          return `0x${hex(value)}`;
        case "HEX":
          return `0X${hex(value).toUpperCase()}`;
        case "hex0":
          return `0x00${hex(value)}`;
        default:
          return String(value);
      }
    });
    return spelled.join(".") + (trailingDot ? "." : "");
  });

/** IPv6 forms whose packets reach the embedded IPv4 address. */
const embeddingV6 = (bytes: number[]) =>
  fc.tuple(fc.constantFrom("mapped-dotted", "mapped-hex", "mapped-long", "nat64", "6to4"), fc.boolean(), fc.integer({ min: 0, max: 0xffff })).map(([form, upper, suffix]) => {
    const [high, low] = [hex((bytes[0]! << 8) | bytes[1]!), hex((bytes[2]! << 8) | bytes[3]!)];
    const text = {
      "mapped-dotted": `::ffff:${bytes.join(".")}`,
      "mapped-hex": `::ffff:${high}:${low}`,
      "mapped-long": `0:0:0:0:0:ffff:${high}:${low}`,
      nat64: `64:ff9b::${bytes.join(".")}`,
      "6to4": `2002:${high}:${low}::${hex(suffix)}`,
    }[form];
    return withCase(text, upper);
  });

/** Spellings of a host in a URL: percent-encoding and full-width digits are decoded by the URL parser. */
const disguise = (host: string) =>
  fc.constantFrom("plain", "percent", "fullwidth", "fullwidth-dots").map((how) => {
    if (host.startsWith("[") || how === "plain") return host;
    if (how === "percent") return [...host].map((c) => (/[0-9]/.test(c) ? `%${hex(c.charCodeAt(0), 2)}` : c)).join("");
    const wide = [...host].map((c) => (/[0-9]/.test(c) ? String.fromCharCode(0xff10 + Number(c)) : c)).join("");
    return how === "fullwidth-dots" ? wide.replaceAll(".", "。") : wide;
  });

const privateHost = fc.oneof(
  privateV4.chain(ipv4Spelling).chain(disguise),
  privateV4.chain(embeddingV6).map((v6) => `[${v6}]`),
  fc.constantFrom("[::1]", "[::]", "[0:0:0:0:0:0:0:1]", "[fe80::1]", "[fc00::1]", "[fd12:3456::1]", "[ff02::1]", "[2001:db8::1]", "[::127.0.0.1]", "[64:ff9b:1::1]"),
  fc.tuple(fc.constantFrom("localhost", "LOCALHOST", "localhost.", "a.localhost", "LocalHost.."), fc.boolean()).map(([name, percent]) => (percent ? name.replace(/l/g, "%6c") : name)),
);

const publicHost = fc.oneof(
  publicV4.chain(ipv4Spelling),
  publicV4.chain(embeddingV6).map((v6) => `[${v6}]`),
  fc.tuple(fc.integer({ min: 0x2400, max: 0x2fff }), fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 })).map(([first, rest]) => `[${[first, ...rest].map((n) => hex(n)).join(":")}]`),
  fc.domain().filter((name) => !/(^|\.)localhost\.?$/i.test(name)),
);

// `https://:@host/` has no credentials at all (the URL serialises without them), so one side is non-empty.
const userPart = fc.string({ unit: fc.constantFrom(..."ab%40%3A:._~-!$&'()*+,;="), maxLength: 12 });
const userinfo = fc
  .tuple(userPart, fc.option(userPart))
  .filter(([user, password]) => user.replace(/:.*/, "") !== "" || (password ?? user.replace(/^[^:]*:?/, "")) !== "")
  .map(([user, password]) => (password === null ? user : `${user}:${password}`));

const urlAround = (host: string) =>
  fc.tuple(fc.constantFrom("", ":443", ":8443", ":"), fc.constantFrom("/", "/hook", "/a?b=c#d", "")).map(([port, path]) => `https://${host}${port}${path}`);

describe("fuzz: webhook URL check", () => {
  test(
    "every spelling of a private, loopback, link-local or reserved address is refused",
    async () => {
      await fuzz(
        "ssrf/private-refused",
        fc.asyncProperty(privateHost.chain(urlAround), async (url) => {
          expect({ url, check: checkWebhookUrl(url, false).ok }).toEqual({ url, check: false });
          // The delivery-time check, handed the host as the URL parser reads it.
          const parsed = URL.canParse(url) ? new URL(url).hostname : null;
          if (parsed !== null) {
            const host = parsed.replace(/^\[(.*)\]$/, "$1");
            const check = await resolveAndCheck(host, async () => ["127.0.0.1"], false);
            expect({ url, ok: check.ok }).toEqual({ url, ok: false });
          }
        }),
      );
    },
    testTimeout(),
  );

  test(
    "credentials are refused whatever the host",
    async () => {
      await fuzz(
        "ssrf/credentials",
        fc.property(fc.oneof(privateHost, publicHost), userinfo, (host, userinfo) => {
          const check = checkWebhookUrl(`https://${userinfo}@${host}/`, false);
          expect(check.ok).toBe(false);
        }),
      );
    },
    testTimeout(),
  );

  test(
    "public addresses and names are accepted, in any spelling",
    async () => {
      await fuzz(
        "ssrf/public-accepted",
        fc.property(publicHost.chain(urlAround), (url) => {
          const check = checkWebhookUrl(url, false);
          // A bare ":" is an empty port, which URL accepts; the address still decides.
          expect({ url, check: check.ok }).toEqual({ url, check: true });
          if (check.ok) {
            const literal = parseHostLiteral(check.url.hostname);
            if (literal !== null) expect(isForbiddenAddress(literal)).toBe(false);
          }
        }),
      );
    },
    testTimeout(),
  );

  test(
    "never throws on any string, URL-like or not",
    async () => {
      const urlish = fc.oneof(
        fc.webUrl({ withQueryParameters: true, withFragments: true }),
        fc.string({ maxLength: 200 }),
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.tuple(fc.constantFrom("https://", "http://", "https:", "HTTPS://", "https:\\\\", "file://", "javascript:", ""), fc.string({ unit: fc.constantFrom(..."[]:.@%0123456789abcdefxX/\\?#fF \t\n"), maxLength: 60 })).map(([scheme, rest]) => scheme + rest),
      );
      await fuzz(
        "ssrf/any-input",
        fc.asyncProperty(urlish, fc.boolean(), async (raw, allowPrivate) => {
          const check = checkWebhookUrl(raw, allowPrivate);
          expect(typeof check.ok).toBe("boolean");
          expect(typeof isForbiddenAddress(raw)).toBe("boolean");
          const literal = parseHostLiteral(raw);
          if (literal !== null) expect(parseHostLiteral(literal)).toBe(literal);
          const answer = await resolveAndCheck(raw, async () => [raw], allowPrivate);
          expect(typeof answer.ok).toBe("boolean");
        }),
      );
    },
    testTimeout(),
  );
});
