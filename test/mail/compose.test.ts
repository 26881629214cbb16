import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { composeMessage, composeMime, envelopeRecipients, newMessageId, prepareMessage, type ComposeInput } from "../../src/mail/compose";
import { compose7bit } from "../../src/mail/compose-7bit";
import { parseMessage } from "../../src/mail/parse";

const base: ComposeInput = {
  from: "alice@inboxd.example",
  to: ["bob@example.com"],
  subject: "Hello",
  text: "Hi Bob",
  messageId: "<m1@inboxd.example>",
  date: new Date("2024-05-01T10:00:00Z"),
};

/** The header section, unfolded, one field per entry. */
function headerFields(raw: Buffer): string[] {
  const text = raw.toString("latin1");
  return text.slice(0, text.indexOf("\r\n\r\n")).split(/\r\n(?![ \t])/);
}

/** RFC 5322 §2.1: CR and LF only ever appear together as CRLF. */
function expectOnlyCrlf(raw: Buffer) {
  expect(raw.toString("latin1")).not.toMatch(/\r(?!\n)|(?<!\r)\n/);
}

describe("composeMessage round trip", () => {
  test("attachments past one encoding slice (256 KiB) come back whole, at every size around the slice edge", async () => {
    for (const size of [256 * 1024, 256 * 1024 + 1, 256 * 1024 + 2, 3 * 1024 * 1024 + 7]) {
      const content = randomBytes(size);
      const raw = await composeMessage({ ...base, attachments: [{ filename: "big.bin", contentType: "application/octet-stream", content }] });
      expect((await parseMessage(raw)).attachments[0]!.content.equals(content)).toBe(true);
      expect(Math.max(...raw.toString("latin1").split("\r\n").map((line) => line.length))).toBeLessThanOrEqual(78);
      expectOnlyCrlf(raw);
    }
  });

  test("text, html, two binary attachments, cc, threading headers; bcc nowhere", async () => {
    const pdf = randomBytes(70_000);
    const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), randomBytes(3000), Buffer.from([0, 13, 10, 13, 10, 0])]);
    const raw = await composeMessage({
      ...base,
      fromName: "Alice Liddell",
      to: ["bob@example.com", "Carol@Example.org"],
      cc: ["dave@example.net"],
      bcc: ["hidden.person@secret.example"],
      subject: "Quarterly numbers — Grüße",
      text: "Numbers attached.\nLine two, ünïcödé.",
      html: "<p>Numbers <b>attached</b>.</p>",
      attachments: [
        { filename: "report.pdf", contentType: "application/pdf", content: pdf },
        { filename: "chart.png", content: png },
      ],
      inReplyTo: "<parent@example.com>",
      references: ["<root@example.com>", "<parent@example.com>"],
    });

    expectOnlyCrlf(raw);
    expect(raw.toString("latin1")).not.toContain("hidden.person");
    expect(raw.toString("latin1")).not.toContain("secret.example");

    const parsed = await parseMessage(raw);
    expect(parsed.from).toBe("alice@inboxd.example");
    expect(parsed.fromName).toBe("Alice Liddell");
    expect(parsed.to).toEqual(["bob@example.com", "Carol@example.org"]);
    expect(parsed.cc).toEqual(["dave@example.net"]);
    expect(parsed.headers.has("bcc")).toBe(false);
    expect(parsed.subject).toBe("Quarterly numbers — Grüße");
    expect(parsed.text?.trim()).toBe("Numbers attached.\nLine two, ünïcödé.");
    expect(parsed.html?.trim()).toBe("<p>Numbers <b>attached</b>.</p>");
    expect(parsed.messageId).toBe("<m1@inboxd.example>");
    expect(parsed.date?.toISOString()).toBe("2024-05-01T10:00:00.000Z");
    expect(parsed.inReplyTo).toBe("<parent@example.com>");
    expect(parsed.references).toEqual(["<root@example.com>", "<parent@example.com>"]);

    expect(parsed.attachments).toHaveLength(2);
    const [first, second] = parsed.attachments;
    expect(first.filename).toBe("report.pdf");
    expect(first.contentType).toBe("application/pdf");
    expect(first.inline).toBe(false);
    expect(Buffer.compare(first.content, pdf)).toBe(0);
    expect(second.filename).toBe("chart.png");
    expect(second.contentType).toBe("image/png");
    expect(Buffer.compare(second.content, png)).toBe(0);
  });

  const structures: [name: string, input: Partial<ComposeInput>, contentType: RegExp][] = [
    ["text only", { text: "t" }, /^text\/plain/],
    ["html only", { text: undefined, html: "<p>h</p>" }, /^text\/html/],
    ["text and html", { text: "t", html: "<p>h</p>" }, /^multipart\/alternative/],
    ["text and html with an attachment", { text: "t", html: "<p>h</p>", attachments: [{ filename: "a.txt", content: Buffer.from("a") }] }, /^multipart\/mixed/],
  ];
  test.each(structures)("%s gives the right top-level type", async (_name, input, contentType) => {
    const parsed = await parseMessage(await composeMessage({ ...base, ...input }));
    expect(parsed.headers.get("content-type")?.[0]).toMatch(contentType);
  });

  test("an attachment declared message/* or multipart/* goes out base64 as application/octet-stream: 7-bit lines, no NUL, and the file comes back whole", async () => {
    const content = Buffer.concat([Buffer.from(`Subject: fwd\r\n\r\n${"x".repeat(5000)}\r\n`), Buffer.from([0, 0xff, 0xfe])]);
    for (const contentType of ["message/rfc822", 'multipart/mixed; boundary="caller-boundary"', "Message/Partial"]) {
      const raw = await composeMessage({ ...base, attachments: [{ filename: "fwd.eml", contentType, content }] });
      expect({ contentType, longestOver78: Math.max(...raw.toString("latin1").split("\r\n").map((line) => line.length)) > 78 }).toEqual({ contentType, longestOver78: false });
      expect(raw.every((byte) => byte > 0 && byte < 0x80)).toBe(true);
      const [attachment] = (await parseMessage(raw)).attachments;
      expect({ contentType, type: attachment?.contentType, name: attachment?.filename, whole: attachment?.content.equals(content) }).toEqual({ contentType, type: "application/octet-stream", name: "fwd.eml", whole: true });
    }
  });

  test("IDN and quoted addresses go out in ASCII and come back the same", async () => {
    const raw = await composeMessage({ ...base, to: ['"john doe"@Bücher.de', "zoe@例え.テスト"] });
    expect(raw.toString("latin1")).toContain("xn--bcher-kva.de");
    const parsed = await parseMessage(raw);
    expect(parsed.to).toEqual(['"john doe"@xn--bcher-kva.de', "zoe@xn--r8jz45g.xn--zckzah"]);
  });
});

describe("header injection", () => {
  const injected = "\r\nBcc: victim@evil.example\r\nX-Injected: yes\r\n\r\nbody";

  test("RFC 5322 §2.1.1: no line over 998 octets, whatever the subject's words or the ids' lengths; the subject reads back the same", async () => {
    const longId = `<${"i".repeat(1500)}@example.com>`;
    for (const subject of ["s".repeat(2000), `Re: ${"x".repeat(1200)} tail`, `Ré: ${"y".repeat(1200)}`, `${"z".repeat(900)} fits`]) {
      for (const extra of [{}, { attachments: [{ filename: "a.bin", content: Buffer.from("x") }] }]) {
        const raw = await composeMessage({ ...base, ...extra, subject, inReplyTo: longId, references: [longId, "<kept@example.com>"] });
        expect(Math.max(...raw.toString("latin1").split("\r\n").map((line) => line.length))).toBeLessThanOrEqual(998);
        const parsed = await parseMessage(raw);
        expect(parsed.subject).toBe(subject);
        expect(parsed.inReplyTo).toBeUndefined();
        expect(parsed.references).toEqual(["<kept@example.com>"]);
      }
    }
  });

  test("RFC 2047 §5: a file name that reads as an encoded word goes out encoded, so readers show the name as given, not what it decodes to", async () => {
    for (const filename of ["=?utf-8?B?aW52b2ljZS5wZGYuZXhl?=", "=?utf-8?B?SGk=?=.txt"]) {
      const raw = (await composeMessage({ ...base, attachments: [{ filename, contentType: "application/octet-stream", content: Buffer.from("x") }] })).toString("latin1");
      // RFC 2231 readers take filename* as written, its sections joined and percent-decoded.
      const sections = [...raw.replace(/\r\n /g, " ").matchAll(/filename\*(\d+)\*?=(?:utf-8'')?([^;\s]+)/g)];
      expect(decodeURIComponent(sections.sort((a, b) => Number(a[1]) - Number(b[1])).map((section) => section[2]).join(""))).toBe(filename);
      expect((await parseMessage(Buffer.from(raw, "latin1"))).attachments.map((attachment) => attachment.filename)).toEqual([filename]);
      // The name= beside it, read alone, shows the same name.
      const withNameOnly = raw.replace(/Content-Disposition: attachment;(\r\n .*)+\r\n/, "");
      expect((await parseMessage(Buffer.from(withNameOnly, "latin1"))).attachments.map((attachment) => attachment.filename)).toEqual([filename]);
    }
  });

  test("RFC 5322 §2.3: a lone CR in a body goes out as a line end, in either composer", async () => {
    for (const extra of [{}, { html: "<p>a\rb</p>" }, { attachments: [{ filename: "a.txt", content: Buffer.from("x") }] }]) {
      const raw = (await composeMessage({ ...base, text: "line1\rline2", ...extra })).toString("latin1");
      expect(raw.replaceAll("\r\n", "")).not.toContain("\r");
      expect(raw).toContain("line1\r\nline2");
    }
  });

  test("In-Reply-To and References name msg-ids only: not words (RFC 5322 §3.6.4), nor an id in UTF-8, which only SMTPUTF8 mail may carry (RFC 6532)", async () => {
    const raw = await composeMessage({ ...base, inReplyTo: "<café-1@example.org>", references: ["see", "previous", "mail", "(thanks)", "<café-1@example.org>", "<kept@example.com>", "bare@example.com"] });
    expect([...raw.toString("latin1")].every((c) => c.charCodeAt(0) < 0x80)).toBe(true);
    const parsed = await parseMessage(raw);
    expect(parsed.inReplyTo).toBeUndefined();
    expect(parsed.references).toEqual(["<kept@example.com>", "<bare@example.com>"]);
  });

  test("RFC 5322 §4: a subject with a run of spaces wider than a line folds into no line of spaces alone (obsolete syntax), and reads back the same", async () => {
    const subject = `Wide${" ".repeat(100)}gap`;
    for (const extra of [{}, { attachments: [{ filename: "a.bin", content: Buffer.from("x") }] }]) {
      const raw = await composeMessage({ ...base, ...extra, subject });
      const header = raw.toString("latin1").split("\r\n\r\n")[0]!;
      expect(header.split("\r\n").filter((line) => /^[ \t]+$/.test(line))).toEqual([]);
      expect((await parseMessage(raw)).subject).toBe(subject);
    }
  });

  test("RFC 5322 §4: a display name or file name with a run of spaces as wide as a line goes out with the run made one space, in either composer", async () => {
    const wide = `A${" ".repeat(100)}B`;
    for (const extra of [{}, { attachments: [{ filename: `${wide}.txt`, content: Buffer.from("x") }] }]) {
      const raw = await composeMessage({ ...base, ...extra, fromName: wide, to: [{ name: wide, address: "bob@example.com" }], cc: [{ name: wide, address: "carol@example.com" }] });
      const header = raw.toString("latin1").split("\r\n\r\n")[0]!;
      expect(header.split("\r\n").filter((line) => /^[ \t]+$/.test(line))).toEqual([]);
      const parsed = await parseMessage(raw);
      expect(parsed.fromName).toBe("A B");
      if ("attachments" in extra) expect(parsed.attachments[0]!.filename).toBe("A B.txt");
    }
  });

  test("RFC 2047 §5: a subject that holds what reads as an encoded word goes out encoded, so readers show its text as given", async () => {
    for (const subject of ["Invoice =?utf-8?B?UGFpZA==?= pending", "=?iso-8859-1?Q?caf=E9?=", "a =? b ?= c"]) {
      for (const extra of [{}, { attachments: [{ filename: "a.bin", content: Buffer.from("x") }] }]) {
        const parsed = await parseMessage(await composeMessage({ ...base, ...extra, subject }));
        expect(parsed.subject).toBe(subject);
      }
    }
  });

  test("CR, LF and NUL in subject, display name, filename and ids add no header", async () => {
    const raw = await composeMessage({
      ...base,
      fromName: `Alice${injected}`,
      subject: `Hello${injected}\0`,
      attachments: [{ filename: `a${injected}.txt`, contentType: `text/plain${injected}`, content: Buffer.from("x") }],
      inReplyTo: `<p@example.com>${injected}`,
      references: [`<r@example.com>${injected}`],
    });
    expectOnlyCrlf(raw);
    expect(raw.includes(0)).toBe(false);
    const text = raw.toString("latin1");
    expect(text).not.toMatch(/^(Bcc|X-Injected):/im);

    const fields = headerFields(raw).map((field) => field.slice(0, field.indexOf(":")).toLowerCase());
    expect(fields.sort()).toEqual(
      ["content-type", "date", "from", "in-reply-to", "message-id", "mime-version", "references", "subject", "to"].sort(),
    );

    const parsed = await parseMessage(raw);
    expect(parsed.headers.has("x-injected")).toBe(false);
    expect(parsed.headers.has("bcc")).toBe(false);
    expect(parsed.subject).toBe("Hello Bcc: victim@evil.example X-Injected: yes body");
    expect(parsed.fromName).toBe("Alice Bcc: victim@evil.example X-Injected: yes body");
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0].filename).toBe("a Bcc: victim@evil.example X-Injected: yes body.txt");
    // The unreadable type was replaced, and reads back as written (no guess from the name).
    expect(text).toContain("Content-Type: application/octet-stream; name=");
    expect(parsed.attachments[0].contentType).toBe("application/octet-stream");
    expect(parsed.attachments[0].content.toString()).toBe("x");
    expect(parsed.inReplyTo).toMatch(/^<[^\s<>]+>$/);
    expect(parsed.references).toHaveLength(1);
  });

  const badAddresses: [field: "from" | "to" | "cc" | "bcc", value: string][] = [
    ["from", `alice@inboxd.example${injected}`],
    ["to", `bob@example.com${injected}`],
    ["cc", "dave@example.net\nX-Injected: yes"],
    ["bcc", "eve@example.net\r\nX-Injected: yes"],
    ["to", "Bob <bob@example.com>, eve@evil.example"],
  ];
  test.each(badAddresses)("an invalid %s address is refused, never written", async (field, value) => {
    const input = field === "from" ? { ...base, from: value } : { ...base, [field]: [value] };
    await expect(composeMessage(input)).rejects.toThrow(/invalid/);
  });
});

describe("envelopeRecipients", () => {
  test("to, cc and bcc, each mailbox once, in canonical form", () => {
    expect(
      envelopeRecipients({ to: ["a@x.example", "b@Bücher.de"], cc: ["c@x.example", "A@X.example"], bcc: ["d@x.example", "C@x.example"] }),
    ).toEqual(["a@x.example", "b@xn--bcher-kva.de", "c@x.example", "d@x.example"]);
  });

  test("refuses an invalid address", () => {
    expect(() => envelopeRecipients({ to: ["a@x.example\r\nRCPT TO:<e@evil.example>"] })).toThrow(/invalid/);
  });
});

describe("newMessageId", () => {
  test("is <random@host>, different every time", () => {
    const first = newMessageId("mail.inboxd.example");
    expect(first).toMatch(/^<[0-9a-f]{32}@mail\.inboxd\.example>$/);
    expect(newMessageId("mail.inboxd.example")).not.toBe(first);
  });

  test("refuses a host name that would break the header", () => {
    expect(() => newMessageId("host\r\nX-Injected: yes")).toThrow();
    expect(() => newMessageId("")).toThrow();
  });
});

describe("the 7bit writer (the common message without nodemailer's pipeline)", () => {
  /** The same bytes, but for the random multipart boundary. */
  const withoutBoundary = (raw: Buffer) => raw.toString("latin1").replace(/--_NmP-[0-9a-f]{16}-Part_1/g, "<boundary>");

  const shapes: [name: string, change: Partial<ComposeInput>][] = [
    ["text only", {}],
    ["html only", { text: undefined, html: "<p>h</p>" }],
    ["text and html", { html: '<p>See <a href="https://x.example/?a=1&b=2">this</a></p>' }],
    ["a display name", { fromName: "Alice  Liddell_2" }],
    ["recipients' display names", { to: [{ address: "ada@example.com", name: "Ada Lovelace" }, "b@example.com"], cc: [{ address: "c@example.org", name: "Carol" }, { address: "d@example.org" }] }],
    ["cc", { cc: ["c@example.com", "d@example.org"] }],
    ["threading headers", { inReplyTo: "<p@example.com>", references: ["<r@example.com>", "<p@example.com>"] }],
    ["references folded", { references: Array.from({ length: 12 }, (_, i) => `<ref${i}.abcdef@mail.example.com>`) }],
    ["recipients folded", { to: Array.from({ length: 9 }, (_, i) => `recipient.number${i}@example.com`), cc: ["O'Neil+tag@example.com"] }],
    ["a long subject folded", { subject: "A rather long subject line that certainly goes beyond the seventy six character limit" }],
    ["a subject of one long word", { subject: "x".repeat(120) }],
    ["no subject", { subject: "" }],
    ["an IDN domain, in its ASCII form", { to: ["b@Bücher.de"] }],
    ["LF, CRLF and lone CR line ends", { text: "a\nb\r\nc\rd\n\n", html: "\n<p>\r</p>\r" }],
    ["a body ending without a line break, or in CR", { text: "abc\r", html: "<p>x</p>" }],
    ["tabs and a line of 76 characters", { text: `a\tb\n${"y".repeat(76)}` }],
  ];
  test.each(shapes)("%s: exactly nodemailer's bytes", async (_name, change) => {
    const message = prepareMessage({ ...base, ...change });
    const direct = compose7bit(message);
    expect(direct).toBeDefined();
    expect(withoutBoundary(direct!)).toBe(withoutBoundary(await composeMime(message)));
  });

  const others: [name: string, change: Partial<ComposeInput>][] = [
    ["a non-ASCII subject", { subject: "Grüße" }],
    ["a subject that looks like an encoded word", { subject: "=?utf-8?q?x?=" }],
    ["a display name that needs quotes", { fromName: "Liddell, Alice" }],
    ["a recipient's display name that needs quotes", { to: [{ address: "ada@example.com", name: "Lovelace, Ada" }] }],
    ["a non-ASCII recipient name", { cc: [{ address: "z@example.com", name: "Zoë" }] }],
    ["a non-ASCII body", { text: "ünïcödé" }],
    ["a line longer than 76 characters", { html: "<p>" + "z".repeat(80) + "</p>" }],
    ["an attachment", { attachments: [{ filename: "a.txt", content: Buffer.from("a") }] }],
    ["a quoted local part", { to: ['"john doe"@example.com'] }],
    ["an empty body", { text: "" }],
    ["no body at all", { text: undefined }],
  ];
  test.each(others)("%s is left to nodemailer", (_name, change) => {
    expect(compose7bit(prepareMessage({ ...base, ...change }))).toBeUndefined();
  });
});
