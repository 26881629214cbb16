// The hand-written signer (src/dkim/sign.ts) proven on awkward messages: each is signed with an RSA
// and an Ed25519 key and must pass two independent verifiers, mailauth (strict) and python3-dkim's
// dkimverify, as the message goes on the wire. Then the changes relaxed canonicalization is meant
// to survive (RFC 6376 §3.4.2, §3.4.4) must still pass, and a changed word must not.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dkimVerify } from "mailauth";
import { dkimTxtValue, generateDkimKeys, type DkimKey } from "../../src/dkim/keys";
import { signMessage } from "../../src/dkim/sign";
import { createResolver, type Resolver } from "../../src/dns/resolver";
import { dkimverifyEach, dkimverifyMissing, type Verdict } from "../peers/dkimverify";
import { startDnsServer, type DnsServer } from "../peers/dns-server";

const DOMAIN = "awkward.example.test";
const FROM = `From: Alice <alice@${DOMAIN}>`;
const DATE = "Date: Sat, 14 Mar 2026 23:30:00 +0000";
const crlf = (...lines: string[]) => lines.join("\r\n");

/** Each message as the API or a test could hand it to the signer (latin1: one character per byte). */
const CASES: { name: string; raw: string }[] = [
  {
    name: "folded header fields with runs of spaces and tabs, trailing whitespace",
    raw: crlf(
      `From:   Alice  <alice@${DOMAIN}>   `,
      "To: bob@receiver.example.test,",
      "\tcarol@receiver.example.test,",
      "    dave@receiver.example.test",
      "Subject: A subject long enough that a careful mail program folds it",
      " \t over\t\ttwo lines  ",
      DATE,
      "MIME-Version: 1.0",
      "Content-Type: text/plain;",
      "\tcharset=utf-8",
      "",
      "Hello.",
      "",
    ),
  },
  {
    name: "repeated signed fields (signed bottom-up) and field names in other cases",
    raw: crlf(FROM, "CC: first@receiver.example.test", "Cc: second@receiver.example.test", "SUBJECT: Shouting", "reply-to: one@example.test", "Reply-To: two@example.test", DATE, "", "Body.", ""),
  },
  {
    name: "a body with trailing whitespace, whitespace runs and blank lines at the end",
    raw: crlf(FROM, "Subject: whitespace", DATE, "", "Trailing spaces   ", "\tTabbed  line with\t\truns \t", "  ", "", "Last line", "   ", "", "\t", ""),
  },
  { name: "an empty body", raw: crlf(FROM, "Subject: empty", DATE, "", "") },
  { name: "a body of empty lines only", raw: crlf(FROM, "Subject: blank lines", DATE, "", "", "", "", "") },
  { name: "no empty line after the header (no body at all)", raw: crlf(FROM, "Subject: header only", DATE, "") },
  { name: "a body that does not end in a line break", raw: crlf(FROM, "Subject: no final CRLF", DATE, "", "First line", "last line without CRLF") },
  {
    name: "long lines in a header field and in the body",
    raw: crlf(FROM, `Subject: ${"long subject words ".repeat(60).trim()}`, DATE, "", "x".repeat(5000), `${"word ".repeat(400)}  `, ""),
  },
  {
    name: "8-bit content: UTF-8 header fields and body, and bytes that are not UTF-8",
    raw: Buffer.from(
      crlf(`From: Zoë Ångström <zoe@${DOMAIN}>`, "Subject: Grüße, 日本語 and ✉", DATE, "MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit", "", "Grüße  aus Köln\t", "Ça va ?", ""),
    ).toString("latin1") + "Latin-1 byte: \xe9\xff\r\n",
  },
  {
    name: "bare LF and bare CR line breaks (the SMTP client sends each as CRLF)",
    raw: `${FROM}\nSubject: bare line breaks\n\tfolded with LF\r${DATE}\n\nLF line  \nCR line\rCRLF line\r\n`,
  },
];

/** What the receiving server sees: nodemailer's DataStream sends every bare CR and bare LF as CRLF. */
const asSent = (message: Buffer) => Buffer.from(message.toString("latin1").replace(/\r\n|\r|\n/g, "\r\n"), "latin1");

let server: DnsServer;
let resolver: Resolver;
let keys: DkimKey[];

beforeAll(async () => {
  server = await startDnsServer();
  resolver = createResolver([server.address], { timeoutMs: 500, tries: 1 });
  keys = await generateDkimKeys(new Date("2026-03-14T00:00:00Z"));
  for (const key of keys) server.set(`${key.selector}._domainkey.${DOMAIN}`, "TXT", [dkimTxtValue(key)]);
});
afterAll(() => server.close());

const signed = (raw: string) => asSent(signMessage(Buffer.from(raw, "latin1"), { domain: DOMAIN, keys }));

async function mailauthResults(message: Buffer): Promise<(string | undefined)[]> {
  const result = await dkimVerify(message, { resolver: resolver.forMailauth, strict: true });
  return result.results.map((entry) => entry.status?.result);
}

describe("mailauth (strict) passes both signatures", () => {
  for (const { name, raw } of CASES) {
    test(name, async () => {
      expect(await mailauthResults(signed(raw))).toEqual(["pass", "pass"]);
    });
  }
});

describe.skipIf(dkimverifyMissing !== undefined)(`dkimverify from python3-dkim passes both signatures${dkimverifyMissing ? ` — skipped: ${dkimverifyMissing}` : ""}`, () => {
  // One Python process per message, all at once; then one test per case.
  const verdicts = new Map<string, Verdict[]>();
  beforeAll(async () => {
    await Promise.all(CASES.map(async ({ name, raw }) => verdicts.set(name, await dkimverifyEach(signed(raw), [0, 1], server.port))));
  }, 30_000);

  for (const { name } of CASES) {
    test(name, () => {
      expect(verdicts.get(name)).toEqual([
        { exitCode: 0, output: "signature ok" },
        { exitCode: 0, output: "signature ok" },
      ]);
    });
  }
});

describe("what relaxed canonicalization survives, and what it does not", () => {
  let original: Buffer;
  let relayed: Buffer;
  let changed: Buffer;
  let added: Buffer[];
  beforeAll(() => {
    original = signed(CASES[0]!.raw);
    const text = original.toString("latin1");
    // What relays do: fold a field elsewhere, change runs of whitespace, add trailing whitespace and blank lines at the end.
    relayed = Buffer.from(
      text
        .replace("Subject: A subject long enough that a careful mail program folds it\r\n \t over\t\ttwo lines  ", "Subject: A subject long enough\r\n\tthat a careful mail program folds it over two lines")
        .replace("To: bob@receiver.example.test,\r\n\tcarol", "To:bob@receiver.example.test, carol")
        .replace("Hello.\r\n", "Hello.  \t\r\n\r\n\r\n"),
      "latin1",
    );
    changed = Buffer.from(text.replace("Hello.", "Hullo."), "latin1");
    // Fields added on the way (RFC 6376 §8.15): a Reply-To the message had none of, a second Subject above the signed one.
    const fromField = text.indexOf("From:");
    added = [`Reply-To: eve@attacker.example.test\r\n`, `Subject: Pay the new account\r\n`].map((field) => Buffer.from(text.slice(0, fromField) + field + text.slice(fromField), "latin1"));
  });

  test("mailauth", async () => {
    expect(relayed.equals(original)).toBe(false);
    expect(await mailauthResults(relayed)).toEqual(["pass", "pass"]);
    expect(await mailauthResults(changed)).toEqual(["fail", "fail"]);
    for (const message of added) expect(await mailauthResults(message)).not.toContain("pass");
  });

  test.skipIf(dkimverifyMissing !== undefined)("dkimverify", async () => {
    const results = (await Promise.all([relayed, changed, ...added].map((message) => dkimverifyEach(message, [0, 1], server.port)))).flat();
    expect(results.map((result) => result.exitCode)).toEqual([0, 0, 1, 1, 1, 1, 1, 1]);
  });
});
