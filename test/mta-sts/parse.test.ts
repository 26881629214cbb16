// RFC 8461 parsing at its edges: the TXT record's id (§3.1), the policy file (§3.2), MX patterns (§4.1).
import { describe, expect, test } from "bun:test";
import { mxMatches, parsePolicy, policyIdOf } from "../../src/mta-sts/parse";
import { policyText } from "../../src/mta-sts/policy";

describe("_mta-sts TXT record", () => {
  test.each([
    [["v=STSv1; id=20160831085700Z"], "20160831085700Z"],
    [["v=STSv1;id=abc", "v=spf1 -all"], "abc"],
    [[`v=STSv1; id=${"a".repeat(32)}`], "a".repeat(32)],
    [[`v=STSv1; id=${"a".repeat(33)}`], undefined],
    [["v=STSv1; id=not-alnum"], undefined],
    [["v=STSv1; id=one", "v=STSv1; id=two"], undefined],
    [["v=STSv10; id=x"], undefined],
    [[], undefined],
  ])("%j: %s", (records, id) => expect(policyIdOf(records)).toBe(id));
});

describe("policy file", () => {
  test("our own policy parses as what it says", () => {
    expect(parsePolicy(policyText({ hostname: "mx.example.com", mtaStsMode: "enforce" }))).toEqual({ mode: "enforce", mxPatterns: ["mx.example.com"], maxAge: 604800 });
  });
  test("several mx lines, LF line ends, unknown keys ignored", () => {
    expect(parsePolicy("version: STSv1\nmode: testing\nmx: A.example.com.\nmx: *.example.net\nmax_age: 0\nextension: x\n")).toEqual({ mode: "testing", mxPatterns: ["a.example.com", "*.example.net"], maxAge: 0 });
  });
  test("max_age up to 31557600 seconds, not one more", () => {
    expect(parsePolicy("version: STSv1\nmode: none\nmax_age: 31557600\n").maxAge).toBe(31557600);
    expect(() => parsePolicy("version: STSv1\nmode: none\nmax_age: 31557601\n")).toThrow("max_age");
  });
  test.each([
    ["version: STSv2\nmode: enforce\nmx: a.b\nmax_age: 1\n", "version"],
    ["version: STSv1\nmode: strict\nmx: a.b\nmax_age: 1\n", "mode"],
    ["version: STSv1\nmode: enforce\nmax_age: 1\n", "names no mx"],
    ["version: STSv1\nmode: enforce\nmx: a.b\n", "max_age"],
    ["<html>not a policy</html>", "key: value"],
  ])("refused: %j", (text, reason) => expect(() => parsePolicy(text)).toThrow(reason));
});

describe("mx patterns", () => {
  test.each([
    ["mx.example.com", ["mx.example.com"], true],
    ["MX.Example.com.", ["mx.example.com"], true],
    ["mx1.example.com", ["*.example.com"], true],
    ["a.mx1.example.com", ["*.example.com"], false],
    ["example.com", ["*.example.com"], false],
    ["mx.example.org", ["mx.example.com", "*.example.net"], false],
  ])("%s against %j: %p", (host, patterns, matches) => expect(mxMatches(host, patterns as string[])).toBe(matches as boolean));
});
