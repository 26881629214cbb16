// Fuzz target: address parsing (src/mail/address.ts). Addresses come from SMTP envelopes, headers
// and API bodies; parseAddress answers null for anything it refuses and must never throw.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { baseAddress, isValidDomainName, normalizeAddress, parseAddress } from "../../src/mail/address";
import { fuzz, testTimeout, withinTime } from "./budget";

const ATEXT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~";
const atom = fc.string({ unit: fc.constantFrom(...ATEXT), minLength: 1, maxLength: 12 });
const dotString = fc.array(atom, { minLength: 1, maxLength: 4 }).map((atoms) => atoms.join("."));

const ldhLabel = fc
  .tuple(fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789"), fc.string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789-"), maxLength: 20 }), fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789"))
  .map(([first, middle, last]) => `${first}${middle}${last}`)
  // "xn--" labels are punycode and must decode: a random one is a different (refused) input.
  .filter((label) => !/^..--/.test(label));
const tld = fc.stringMatching(/^[a-z]{2,8}$/);
const asciiDomain = fc.tuple(fc.array(ldhLabel, { minLength: 1, maxLength: 3 }), tld).map(([labels, top]) => [...labels, top].join("."));

/** Valid, canonical ASCII addresses within the RFC 5321 lengths. */
const canonicalAddress = fc
  .tuple(dotString, asciiDomain)
  .map(([local, domain]) => `${local}@${domain}`)
  .filter((address) => address.length <= 254 && address.split("@")[0]!.length <= 64);

// RFC 5321 qtextSMTP plus the two characters that need a backslash.
const QTEXT = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join("");
const quotedContent = fc.string({ unit: fc.constantFrom(...QTEXT), minLength: 1, maxLength: 30 });
const quote = (content: string) => `"${content.replace(/(["\\])/g, "\\$1")}"`;

/** Inputs near the grammar: pieces of valid addresses, quoting, IDN, brackets, controls, lengths. */
const nearAddress = fc.oneof(
  canonicalAddress,
  fc.tuple(quotedContent, asciiDomain).map(([content, domain]) => `${quote(content)}@${domain}`),
  fc.tuple(dotString, fc.array(fc.oneof(ldhLabel, fc.string({ minLength: 1, maxLength: 10 })), { minLength: 1, maxLength: 4 })).map(([local, labels]) => `${local}@${labels.join(".")}`),
  fc.tuple(fc.string({ maxLength: 80 }), fc.string({ maxLength: 80 })).map(([a, b]) => `${a}@${b}`),
  fc.string({ unit: fc.constantFrom(..."a.@\"\\[]<> \r\n\t\x00%:xn--é．。ß"), maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.tuple(fc.constantFrom("a", '"a b"', "x".repeat(64), "x".repeat(65)), fc.integer({ min: 0, max: 300 })).map(([local, n]) => `${local}@${"d".repeat(n)}.com`),
  fc.string({ maxLength: 5000 }),
);

describe("fuzz: parseAddress", () => {
  test(
    "a canonical address comes back unchanged",
    async () => {
      await fuzz(
        "address/canonical",
        fc.property(canonicalAddress, (address) => {
          const parsed = parseAddress(address);
          expect(parsed).toEqual({ local: address.slice(0, address.lastIndexOf("@")), domain: address.slice(address.lastIndexOf("@") + 1), address });
          expect(normalizeAddress(address)).toBe(address.toLowerCase());
        }),
      );
    },
    testTimeout(),
  );

  test(
    "a quoted local part round-trips: quoted, parsed, unquoted, the same text",
    async () => {
      await fuzz(
        "address/quoted",
        fc.property(quotedContent, asciiDomain, (content, domain) => {
          const parsed = parseAddress(`${quote(content)}@${domain}`);
          if (`${quote(content)}@${domain}`.length > 1024) return;
          const local = parsed === null ? null : parsed.local.startsWith('"') ? parsed.local.slice(1, -1).replace(/\\(.)/g, "$1") : parsed.local;
          // Refused only for its length (RFC 5321 §4.5.3.1.1) or an angle bracket (src/mail/address.ts);
          // otherwise the content survives.
          if (parsed === null) expect(/[<>]/.test(content) || quote(content).length > 64 || `${quote(content)}@${domain}`.length > 254).toBe(true);
          else expect(local).toBe(content);
        }),
      );
    },
    testTimeout(),
  );

  test(
    "never throws; whatever it accepts is a bounded, control-free address that parses to itself",
    async () => {
      await fuzz(
        "address/any-input",
        fc.property(nearAddress, (input) => {
          const parsed = parseAddress(input);
          if (parsed === null) return;
          expect(parsed.address).toBe(`${parsed.local}@${parsed.domain}`);
          expect(parsed.address.length).toBeLessThanOrEqual(254);
          expect(parsed.local.length).toBeLessThanOrEqual(64);
          expect(parsed.address).not.toMatch(/[\x00-\x1f\x7f]/);
          expect(isValidDomainName(parsed.domain)).toBe(true);
          expect(parsed.domain).toBe(parsed.domain.toLowerCase());
          // Formatting the parsed address and parsing it again is a fixed point.
          expect(parseAddress(parsed.address)).toEqual(parsed);
          const normal = normalizeAddress(input)!;
          expect(normalizeAddress(normal)).toBe(normal);
          // The base need not be a valid address itself (`a.+b@d` gives `a.@d`): it is only looked up.
          const base = baseAddress(input)!;
          const [baseLocal] = base.split("@");
          expect(base === normal || normal.startsWith(`${baseLocal}+`)).toBe(true);
          expect(base.endsWith(`@${parsed.domain}`)).toBe(true);
        }),
      );
    },
    testTimeout(),
  );

  test(
    "time per call stays bounded on long hostile input",
    async () => {
      await fuzz(
        "address/long-input",
        fc.asyncProperty(fc.string({ unit: fc.constantFrom(..."a.-@\"\\x"), minLength: 900, maxLength: 1024 }), fc.constantFrom("", "@example.com"), async (body, tail) => {
          await withinTime("parseAddress", () => parseAddress(body + tail), 200);
        }),
        { ciRuns: 500 },
      );
    },
    testTimeout(),
  );
});
