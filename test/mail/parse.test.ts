import { describe, expect, test } from "bun:test";
import { MAX_HEADER_BYTES, MAX_HTML_TO_TEXT_CHARS, MAX_MIME_PARTS, MessageLimitError } from "../../src/mail/limits";
import { parseMessage } from "../../src/mail/parse";

/** A message from lines joined with CRLF; Buffer pieces keep their exact bytes. */
function message(...pieces: (string | Buffer)[]): Buffer {
  return Buffer.concat(pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece.replace(/\n/g, "\r\n")) : piece)));
}

const latin1 = (text: string) => Buffer.from(text, "latin1");

describe("parseMessage: encodings", () => {
  test("RFC 2047 subjects: Q and B words, other charsets, folded adjacent words", async () => {
    const cases: [header: string, subject: string][] = [
      ["=?ISO-8859-1?Q?Gr=FC=DFe_aus_K=F6ln?=", "Grüße aus Köln"],
      ["=?UTF-8?B?8J+OiSBQYXJ0eSE=?=", "🎉 Party!"],
      // RFC 2047 §6.2: white space between adjacent encoded words is dropped.
      ["=?UTF-8?Q?Caf=C3=A9?=\n =?UTF-8?Q?_cr=C3=A8me?=", "Café crème"],
      ["=?windows-1252?Q?=93Quoted=94_=96_=80100?=", "“Quoted” – €100"],
      ["=?ISO-2022-JP?B?GyRCRnxLXDhsGyhC?=", "日本語"],
      ["Re: plain ASCII", "Re: plain ASCII"],
    ];
    for (const [header, subject] of cases) {
      const parsed = await parseMessage(message(`From: a@example.com\nSubject: ${header}\n\nbody\n`));
      expect(parsed.subject).toBe(subject);
    }
  });

  test("a file name in an RFC 2231 parameter is taken as written, never read again for encoded words (RFC 2047 section 5); a plain name= still is", async () => {
    const encodedWord = "=?utf-8?B?aW52b2ljZS5wZGYuZXhl?="; // reads as invoice.pdf.exe
    const part = (headers: string) => `--m\n${headers}\nContent-Transfer-Encoding: base64\n\nAAEC\n`;
    const parsed = await parseMessage(
      message(
        "From: a@example.com\nContent-Type: multipart/mixed; boundary=m\n\n",
        part("Content-Type: application/octet-stream\nContent-Disposition: attachment; filename*=utf-8''%3D%3Futf-8%3FB%3FaW52b2ljZS5wZGYuZXhl%3F%3D"),
        part("Content-Type: application/octet-stream; name*0*=utf-8''%3D%3Futf-8%3FB%3F; name*1*=aW52b2ljZS5wZGYuZXhl%3F%3D"),
        part(`Content-Type: application/octet-stream\nContent-Disposition: attachment; filename*0="=?utf-8?B?"; filename*1="${Buffer.from(encodedWord).toString("base64")}?="`),
        part(`Content-Type: application/octet-stream; name="${encodedWord}"`),
        "--m--\n",
      ),
    );
    expect(parsed.attachments.map((attachment) => attachment.filename)).toEqual([encodedWord, encodedWord, encodedWord, "invoice.pdf.exe"]);
  });

  test("ISO-8859-1 body, 8bit and quoted-printable", async () => {
    const eightBit = await parseMessage(
      message("From: a@example.com\nContent-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: 8bit\n\n", latin1("Grüße aus Köln, Señor.\r\n")),
    );
    expect(eightBit.text?.trim()).toBe("Grüße aus Köln, Señor.");

    const quotedPrintable = await parseMessage(
      message("From: a@example.com\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n\nGr=FC=DFe aus K=F6ln, Se=F1or.\n"),
    );
    expect(quotedPrintable.text?.trim()).toBe("Grüße aus Köln, Señor.");
  });

  test("windows-1252 body", async () => {
    const parsed = await parseMessage(
      message("From: a@example.com\nContent-Type: text/plain; charset=windows-1252\n\n", Buffer.from([0x93, 0x48, 0x69, 0x94, 0x20, 0x96, 0x20, 0x80, 0x35, 0x0d, 0x0a])),
    );
    expect(parsed.text?.trim()).toBe("“Hi” – €5");
  });

  test("8-bit text that declares no charset: UTF-8 as it is, else read as windows-1252 (WHATWG's fallback), never U+FFFD; a declared charset stands", async () => {
    const legacy = Buffer.from([0x43, 0x61, 0x66, 0xe9, 0x20, 0x93, 0x48, 0x69, 0x94, 0x0d, 0x0a]);
    expect((await parseMessage(message("From: a@example.com\n\n", legacy))).text?.trim()).toBe("Café “Hi”");
    const html = await parseMessage(message("From: a@example.com\nContent-Type: text/html\n\n", Buffer.concat([Buffer.from("<p>"), legacy])));
    expect(html.html).toBe("<p>Café “Hi”\n");
    expect((await parseMessage(message("From: a@example.com\n\n", Buffer.from("Café “Hi”\r\n")))).text?.trim()).toBe("Café “Hi”");
    expect((await parseMessage(message("From: a@example.com\nContent-Type: text/plain; charset=utf-8\n\n", legacy))).text?.trim()).toBe("Caf\ufffd \ufffdHi\ufffd");
  });

  test("ISO-2022-JP body", async () => {
    const parsed = await parseMessage(
      message(
        "From: a@example.com\nContent-Type: text/plain; charset=ISO-2022-JP\nContent-Transfer-Encoding: 7bit\n\n",
        Buffer.from("1b244224332473244b2441244f1b28420d0a", "hex"),
      ),
    );
    expect(parsed.text?.trim()).toBe("こんにちは");
  });

  test("display names in encoded words; IDN addresses come back in ASCII", async () => {
    const parsed = await parseMessage(
      message(
        "From: =?UTF-8?Q?Zo=C3=AB_M=C3=BCller?= <zoe@xn--bcher-kva.de>\n",
        "To: Team: bob@example.com, =?UTF-8?B?w4lsaXNl?= <elise@Example.ORG>;, nobody\n",
        "Cc: undisclosed-recipients:;\n",
        "Reply-To: replies@example.com\n",
        "\nbody\n",
      ),
    );
    expect(parsed.from).toBe("zoe@xn--bcher-kva.de");
    expect(parsed.fromName).toBe("Zoë Müller");
    expect(parsed.to).toEqual(["bob@example.com", "elise@example.org"]);
    expect(parsed.cc).toEqual([]);
    expect(parsed.replyTo).toEqual(["replies@example.com"]);
  });
});

describe("parseMessage: bodies", () => {
  test("html-only message gets a text version", async () => {
    const parsed = await parseMessage(
      message("From: a@example.com\nContent-Type: text/html; charset=utf-8\n\n<h1>Welcome</h1><p>Click <a href=\"https://example.com/x\">here</a>.</p>\n"),
    );
    expect(parsed.html).toContain("<h1>Welcome</h1>");
    expect(parsed.text).toContain("WELCOME");
    expect(parsed.text).toContain("Click here [https://example.com/x].");
  });

  test("html plus attachment, no text part (mailparser alone gives no text)", async () => {
    const parsed = await parseMessage(
      message(
        "From: a@example.com\nContent-Type: multipart/mixed; boundary=b\n\n",
        "--b\nContent-Type: text/html; charset=utf-8\n\n<p>See the <b>invoice</b>.</p>\n",
        "--b\nContent-Type: application/pdf; name=invoice.pdf\nContent-Disposition: attachment; filename=invoice.pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n",
        "--b--\n",
      ),
    );
    expect(parsed.text?.trim()).toBe("See the invoice.");
    expect(parsed.attachments.map((attachment) => attachment.filename)).toEqual(["invoice.pdf"]);
    expect(parsed.attachments[0].content.toString()).toBe("%PDF-1.4\n");
  });

  test("parts that are no alternatives of each other (mixed) are all in both versions: an HTML body with a text footer, two texts beside an HTML part", async () => {
    const mixed = (...parts: string[]) =>
      parseMessage(message("From: a@example.com\nContent-Type: multipart/mixed; boundary=b\n\n", ...parts.map((part) => `--b\n${part}\n`), "--b--\n"));
    const footer = "Content-Type: text/plain; charset=utf-8\n\nlist footer: unsubscribe at https://x.test/ <now>";
    const withFooter = await mixed("Content-Type: text/html; charset=utf-8\n\n<p>The main <b>announcement</b> body</p>", footer);
    expect(withFooter.text).toContain("The main announcement body");
    expect(withFooter.text).toContain("list footer: unsubscribe");
    expect(withFooter.html).toContain("<p>The main <b>announcement</b> body</p>");
    // The text part escaped into the HTML, not linkified (textAsHtml is not built).
    expect(withFooter.html).toContain("list footer: unsubscribe at https://x.test/ &lt;now&gt;");
    expect(withFooter.html).not.toContain("<a href");

    const twoTexts = await mixed("Content-Type: text/plain\n\nfirst text", "Content-Type: text/plain\n\nsecond text", "Content-Type: text/html\n\n<p>html part</p>");
    for (const words of ["first text", "second text"]) expect(twoTexts.html).toContain(words);
    expect(twoTexts.text).toContain("html part");

    // Within an alternative each version is whole already: nothing is added across.
    const alternative = await parseMessage(
      message(
        "From: a@example.com\nContent-Type: multipart/alternative; boundary=a\n\n",
        "--a\nContent-Type: text/plain\n\nplain version\n",
        "--a\nContent-Type: text/html\n\n<p>html version</p>\n",
        "--a--\n",
      ),
    );
    expect(alternative.text).not.toContain("html version");
    expect(alternative.html).not.toContain("plain version");
  });

  test("an HTML part beside text parts becomes text from its first MAX_HTML_TO_TEXT_CHARS characters only", async () => {
    const html = `<p>${"a".repeat(MAX_HTML_TO_TEXT_CHARS)}</p><p>TAIL</p>`;
    const parsed = await parseMessage(
      message("From: a@example.com\nContent-Type: multipart/mixed; boundary=b\n\n", "--b\nContent-Type: text/plain\n\nintro\n", `--b\nContent-Type: text/html\n\n${html}\n`, "--b--\n"),
    );
    expect(parsed.text).toContain("intro");
    expect(parsed.text).not.toContain("TAIL");
    expect(parsed.html).toContain("TAIL");
  });

  test("text-only message has no html", async () => {
    const parsed = await parseMessage(message("From: a@example.com\nContent-Type: text/plain\n\nJust text, https://example.com.\n"));
    expect(parsed.text?.trim()).toBe("Just text, https://example.com.");
    expect(parsed.html).toBeUndefined();
  });

  test("only the first MAX_HTML_TO_TEXT_CHARS of the HTML become text", async () => {
    const html = `<p>${"a".repeat(MAX_HTML_TO_TEXT_CHARS)}</p><p>TAIL</p>`;
    const parsed = await parseMessage(message(`From: a@example.com\nContent-Type: text/html\n\n${html}\n`));
    expect(parsed.html).toContain("TAIL");
    expect(parsed.text).not.toContain("TAIL");
  });

  test("HTML that html-to-text cannot convert leaves text empty, not the parse failed", async () => {
    const html = "<div>".repeat(50_000);
    const parsed = await parseMessage(message(`From: a@example.com\nContent-Type: text/html\n\n${html}\n`));
    expect(parsed.html).toBeDefined();
    expect(parsed.text).toBeUndefined();
  });

  test("inline image: content id without brackets, html keeps its cid: link", async () => {
    const parsed = await parseMessage(
      message(
        "From: a@example.com\nContent-Type: multipart/related; boundary=r\n\n",
        "--r\nContent-Type: text/html\n\n<img src=\"cid:logo@x\">\n",
        "--r\nContent-Type: image/gif\nContent-ID: <logo@x>\nContent-Disposition: inline\nContent-Transfer-Encoding: base64\n\nR0lGODlhAQABAAAAACw=\n",
        "--r--\n",
      ),
    );
    expect(parsed.html).toContain('src="cid:logo@x"');
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]).toMatchObject({ contentId: "logo@x", inline: true, contentType: "image/gif" });
  });

  test("an empty Content-ID (<>) and an empty file name are left out, as if the part had none", async () => {
    const parsed = await parseMessage(
      message(
        "From: a@example.com\nContent-Type: multipart/mixed; boundary=m\n\n",
        "--m\nContent-Type: text/plain\n\nSee attached.\n",
        '--m\nContent-Type: application/octet-stream\nContent-ID: <>\nContent-Disposition: attachment; filename=""\nContent-Transfer-Encoding: base64\n\nAAEC\n',
        "--m--\n",
      ),
    );
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]!.contentId).toBeUndefined();
    expect(parsed.attachments[0]!.filename).toBeUndefined();
  });
});

describe("parseMessage: header fields", () => {
  test("threading fields, raw header map unfolded, repeated fields kept in order", async () => {
    const parsed = await parseMessage(
      message(
        "Received: from a by b; Wed, 1 May 2024 10:00:00 +0000\n",
        "Received: from c\n by d; Wed, 1 May 2024 09:59:00 +0000\n",
        "From: a@example.com\n",
        "Subject: =?UTF-8?Q?caf=C3=A9?=\n",
        "Message-ID: <m2@example.com>\n",
        "In-Reply-To: <m1@example.com>\n",
        "References: <m0@example.com>\n <m1@example.com>\n",
        "Auto-Submitted: auto-replied\n",
        "Date: Wed, 1 May 2024 12:00:00 +0200 (CEST)\n",
        "\nbody\n",
      ),
    );
    expect(parsed.messageId).toBe("<m2@example.com>");
    expect(parsed.inReplyTo).toBe("<m1@example.com>");
    expect(parsed.references).toEqual(["<m0@example.com>", "<m1@example.com>"]);
    expect(parsed.date?.toISOString()).toBe("2024-05-01T10:00:00.000Z");
    expect(parsed.headers.get("received")).toEqual([
      "from a by b; Wed, 1 May 2024 10:00:00 +0000",
      "from c by d; Wed, 1 May 2024 09:59:00 +0000",
    ]);
    expect(parsed.headers.get("subject")).toEqual(["=?UTF-8?Q?caf=C3=A9?="]);
    expect(parsed.headers.get("auto-submitted")).toEqual(["auto-replied"]);
  });

  test("a single reference is still a list; no references is empty", async () => {
    const one = await parseMessage(message("From: a@example.com\nReferences: <only@example.com>\n\nx\n"));
    expect(one.references).toEqual(["<only@example.com>"]);
    const none = await parseMessage(message("From: a@example.com\n\nx\n"));
    expect(none.references).toEqual([]);
    expect(none.subject).toBe("");
    expect(none.messageId).toBeUndefined();
  });

  test("a missing or unreadable Date is absent, not the time of parsing", async () => {
    expect((await parseMessage(message("From: a@example.com\n\nx\n"))).date).toBeUndefined();
    expect((await parseMessage(message("From: a@example.com\nDate: someday soon\n\nx\n"))).date).toBeUndefined();
  });

  test("a From without a valid address gives no from", async () => {
    const parsed = await parseMessage(message("From: Mail System <MAILER-DAEMON>\n\nx\n"));
    expect(parsed.from).toBeUndefined();
    expect(parsed.fromName).toBeUndefined();
  });

  test("a header field name like __proto__ is just a key", async () => {
    const parsed = await parseMessage(message("From: a@example.com\n__proto__: x\nconstructor: y\n\nbody\n"));
    expect(parsed.headers.get("__proto__")).toEqual(["x"]);
    expect(parsed.headers.get("constructor")).toEqual(["y"]);
  });
});

describe("parseMessage: limits", () => {
  test(`more than ${MAX_MIME_PARTS} MIME parts is a MessageLimitError`, async () => {
    const parts = Array.from({ length: MAX_MIME_PARTS + 1 }, (_, i) => `--b\nContent-Type: text/plain\n\npart ${i}\n`);
    const raw = message("From: a@example.com\nContent-Type: multipart/mixed; boundary=b\n\n", ...parts, "--b--\n");
    await expect(parseMessage(raw)).rejects.toBeInstanceOf(MessageLimitError);
  });

  test(`a header section over ${MAX_HEADER_BYTES} bytes is a MessageLimitError`, async () => {
    const raw = message(`From: a@example.com\nX-Padding: ${"a".repeat(MAX_HEADER_BYTES)}\n\nbody\n`);
    await expect(parseMessage(raw)).rejects.toBeInstanceOf(MessageLimitError);
  });

  test("a message at the limits still parses", async () => {
    const parts = Array.from({ length: MAX_MIME_PARTS - 1 }, (_, i) => `--b\nContent-Type: application/octet-stream\n\n${i}\n`);
    const raw = message("From: a@example.com\nContent-Type: multipart/mixed; boundary=b\n\n", ...parts, "--b--\n");
    expect((await parseMessage(raw)).attachments).toHaveLength(MAX_MIME_PARTS - 1);
  });
});
