import { describe, expect, test } from "bun:test";
import { baseAddress, isValidAddress, isValidDomainName, normalizeAddress, parseAddress, parseMailbox } from "../../src/mail/address";

/** A valid domain of exactly `length` characters: labels of 62 or 63 "a", then ".com". */
function domainOfLength(length: number): string {
  const labels = `${"a".repeat(62)}.`.repeat(5).slice(0, length - ".com".length);
  return `${labels.replace(/\.$/, "a")}.com`;
}

describe("parseAddress", () => {
  const valid: [name: string, input: string, address: string][] = [
    ["plain", "user@example.com", "user@example.com"],
    ["domain lower-cased, local kept", "Alice.Smith@Example.COM", "Alice.Smith@example.com"],
    ["subaddress", "user+tag@example.com", "user+tag@example.com"],
    ["every atext special", "!#$%&'*+-/=?^_`{|}~@example.com", "!#$%&'*+-/=?^_`{|}~@example.com"],
    ["subdomains and hyphens", "a@mx-1.mail.example.co.uk", "a@mx-1.mail.example.co.uk"],
    ["quoted local with a space", '"john doe"@example.com', '"john doe"@example.com'],
    ["quoted local with an escaped quote", '"a\\"b"@example.com', '"a\\"b"@example.com'],
    ["quoted local that needs no quotes", '"john.doe"@example.com', "john.doe@example.com"],
    ["quoted local holding an @", '"a@b"@example.com', '"a@b"@example.com'],
    ["IDN domain to A-labels", "user@Bücher.de", "user@xn--bcher-kva.de"],
    ["IDN domain, Japanese", "user@例え.テスト", "user@xn--r8jz45g.xn--zckzah"],
    ["full-width domain mapped", "user@ｅｘａｍｐｌｅ.com", "user@example.com"],
    ["A-label domain kept", "user@xn--bcher-kva.de", "user@xn--bcher-kva.de"],
    ["64-character local", `${"l".repeat(64)}@example.com`, `${"l".repeat(64)}@example.com`],
    ["254 characters in all", `${"l".repeat(64)}@${domainOfLength(189)}`, `${"l".repeat(64)}@${domainOfLength(189)}`],
  ];
  test.each(valid)("accepts %s", (_name, input, address) => {
    expect(parseAddress(input)?.address).toBe(address);
    expect(isValidAddress(input)).toBe(true);
  });

  const invalid: [name: string, input: string][] = [
    ["empty", ""],
    ["no @", "user.example.com"],
    ["empty local", "@example.com"],
    ["empty domain", "user@"],
    ["leading dot", ".user@example.com"],
    ["trailing dot in local", "user.@example.com"],
    ["double dot", "us..er@example.com"],
    ["unquoted space", "john doe@example.com"],
    ["leading space", " user@example.com"],
    ["trailing space", "user@example.com "],
    ["display name", "User <user@example.com>"],
    ["angle brackets", "<user@example.com>"],
    ["two @", "a@b@example.com"],
    ["CR LF in local", "user\r\nBcc: x@evil.com@example.com"],
    ["CR LF in domain (URL parsers drop it)", "user@exam\r\nple.com"],
    ["LF", "user@example.com\nX-Evil: 1"],
    ["NUL", "user\0@example.com"],
    ["tab", "user\t@example.com"],
    ["CR LF inside quotes", '"a\r\nb"@example.com'],
    ["non-ASCII local", "josé@example.com"],
    ["unterminated quote", '"abc@example.com'],
    ["single-label domain", "user@localhost"],
    ["numeric top-level label", "user@1.2.3.4"],
    ["IPv4 in hex that URL parsers accept", "user@0x7f.1"],
    ["address literal", "user@[192.0.2.1]"],
    ["domain label with underscore", "user@my_host.example.com"],
    ["label starting with hyphen", "user@-example.com"],
    ["label ending with hyphen", "user@example-.com"],
    ["empty label", "user@example..com"],
    ["trailing root dot", "user@example.com."],
    ["64-character label", `user@${"a".repeat(64)}.com`],
    ["bad punycode", "user@xn--zz.com"],
    ["65-character local", `${"l".repeat(65)}@example.com`],
    ["255 characters in all", `${"l".repeat(64)}@${domainOfLength(190)}`],
    ["very long input", `${"a".repeat(5000)}@example.com`],
  ];
  test.each(invalid)("rejects %s", (_name, input) => {
    expect(parseAddress(input)).toBeNull();
    expect(isValidAddress(input)).toBe(false);
  });

  test("splits into local and ASCII domain", () => {
    expect(parseAddress("Zoë@Bücher.de")).toBeNull();
    expect(parseAddress("Zoe@Bücher.de")).toEqual({
      local: "Zoe",
      domain: "xn--bcher-kva.de",
      address: "Zoe@xn--bcher-kva.de",
    });
  });

  test("the length helper builds what the table claims", () => {
    expect(`${"l".repeat(64)}@${domainOfLength(189)}`).toHaveLength(254);
    expect(`${"l".repeat(64)}@${domainOfLength(190)}`).toHaveLength(255);
    for (const length of [189, 190, 253, 254]) expect(domainOfLength(length)).toHaveLength(length);
    expect(isValidDomainName(domainOfLength(190))).toBe(true);
  });
});

describe("parseMailbox", () => {
  test.each([
    ["a bare address", " user@Example.COM ", { address: "user@example.com" }],
    ["a display name", "Ada Lovelace <ada@example.com>", { address: "ada@example.com", name: "Ada Lovelace" }],
    ["no space before the bracket", "Ada<ada@example.com>", { address: "ada@example.com", name: "Ada" }],
    ["white space runs in the name", "  Ada \t Lovelace   < ada@example.com >", null],
    ["spaces in the name", "  Ada   Lovelace   < ada@example.com >", { address: "ada@example.com", name: "Ada Lovelace" }],
    ["a quoted name with a comma", '"Lovelace, Ada" <ada@example.com>', { address: "ada@example.com", name: "Lovelace, Ada" }],
    ["a quoted name with an escaped quote and brackets", '"Ada \\"the Countess\\" <L>" <ada@example.com>', { address: "ada@example.com", name: 'Ada "the Countess" <L>' }],
    ["brackets alone", "<ada@example.com>", { address: "ada@example.com" }],
    ["an empty quoted name", '"" <ada@example.com>', { address: "ada@example.com" }],
    ["a non-ASCII name and IDN domain", "Zoë Müller <zoe@Bücher.de>", { address: "zoe@xn--bcher-kva.de", name: "Zoë Müller" }],
  ])("accepts %s", (_name, input, expected) => {
    expect(parseMailbox(input)).toEqual(expected);
  });

  test.each([
    ["a list", "a@example.com, b@example.com"],
    ["a list with names", "a@example.com, Bob <b@example.com>"],
    ["a group", "Team: a@example.com;"],
    ["a comma in an unquoted name", "Lovelace, Ada <ada@example.com>"],
    ["text after the address", "Ada <ada@example.com> (work)"],
    ["two bracketed addresses", "Ada <ada@example.com> <b@example.com>"],
    ["an unterminated quote", '"Ada <ada@example.com>'],
    ["an invalid address in brackets", "Ada <ada@localhost>"],
    ["a line break in the name", "Ada\r\nBcc: x@example.com <ada@example.com>"],
    ["a name past 256 characters", `${"n".repeat(257)} <ada@example.com>`],
    ["empty", ""],
  ])("refuses %s", (_name, input) => {
    expect(parseMailbox(input)).toBeNull();
  });
});

describe("normalizeAddress and baseAddress", () => {
  const cases: [input: string, normalized: string | null, base: string | null][] = [
    ["Alice.Smith+News@Example.COM", "alice.smith+news@example.com", "alice.smith@example.com"],
    ["a+x@d.example", "a+x@d.example", "a@d.example"],
    ["a+x+y@d.example", "a+x+y@d.example", "a@d.example"],
    ["plain@d.example", "plain@d.example", "plain@d.example"],
    ["+only@d.example", "+only@d.example", "+only@d.example"],
    ['"A+B C"@d.example', '"a+b c"@d.example', '"a+b c"@d.example'],
    ["USER@Bücher.DE", "user@xn--bcher-kva.de", "user@xn--bcher-kva.de"],
    ["not an address", null, null],
    ["a+x@d.example\r\nBcc: e@evil.example", null, null],
  ];
  test.each(cases)("%p", (input, normalized, base) => {
    expect(normalizeAddress(input)).toBe(normalized);
    expect(baseAddress(input)).toBe(base);
  });
});

describe("isValidDomainName", () => {
  const cases: [name: string, valid: boolean][] = [
    ["example.com", true],
    ["mail.example.co.uk", true],
    ["xn--bcher-kva.de", true],
    ["EXAMPLE.COM", true],
    ["a-b.c0", true],
    [domainOfLength(253), true],
    [domainOfLength(254), false],
    ["com", false],
    ["", false],
    ["example.com.", false],
    [".example.com", false],
    ["exa mple.com", false],
    ["exa_mple.com", false],
    ["-example.com", false],
    ["example-.com", false],
    ["192.0.2.1", false],
    [`${"a".repeat(64)}.com`, false],
    ["bücher.de", false],
    ["example.com\r\n", false],
  ];
  test.each(cases)("%p → %p", (name, valid) => {
    expect(isValidDomainName(name)).toBe(valid);
  });
});

describe("domains that a URL parser would rewrite", () => {
  test.each(["user@example.com/path", "user@ex%41mple.com", "user@example.com:25", "user@example.com?x", "user@exa_mple.com", "user@example.com#a", "user@exam\\ple.com"])("%s is refused", (input) => {
    expect(parseAddress(input)).toBeNull();
  });
  test("an IDN domain still becomes its A-label", () => {
    expect(parseAddress("user@bücher.example")?.domain).toBe("xn--bcher-kva.example");
  });
});
