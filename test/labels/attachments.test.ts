// Attachments and the raw source as downloads: an active type (SVG with a script) and hostile file
// names (quotes, line breaks, path separators, non-ASCII) come back as safe attachments; attachment
// ids stay the same on every read; an inline image's Content-ID is on its attachment, so the
// `cid:` URL in the HTML names a downloadable attachment.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually, register, startTestServer, type Registered, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";
import { relatedMessage } from "../mail/related-message";

let server: TestServer;
let account: Registered;
let key: string;
beforeAll(async () => {
  server = await startTestServer();
  account = await register(server.api);
  key = account.apiKey.key;
});
afterAll(() => server.cleanup());

const download = (path: string) => fetch(`${server.api.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
const messagesPath = () => `/v1/inboxes/${account.inbox.id}/messages`;

/** Every header of a download that keeps a browser from running it at the API's origin. */
function expectSafeDownload(response: Response) {
  expect(response.headers.get("content-disposition")).toStartWith("attachment; ");
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  expect(response.headers.get("content-security-policy")).toBe("sandbox");
  expect(response.headers.get("content-disposition")).not.toMatch(/[\r\n]/);
}

async function receive(raw: string, subject: string) {
  await sendMail(server.smtpPort, { from: "sender@sender.test", to: [account.inbox.email], raw });
  const list = await eventually(subject, async () => (await server.api.get(messagesPath(), key)).body as { id: string; subject: string }[], (body) => body.some((m) => m.subject === subject));
  return (await server.api.get(`${messagesPath()}/${list.find((m) => m.subject === subject)!.id}`, key)).body;
}

/** A message of a line of text and one attachment, given the attachment's header lines and body. */
const withAttachment = (subject: string, partHeaders: string[], body: string) =>
  [
    ...["From: sender@sender.test", `To: ${account.inbox.email}`, `Subject: ${subject}`, "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="mix"', ""],
    ...["--mix", "Content-Type: text/plain", "", "See attached.", "--mix", ...partHeaders, "", body, "--mix--", ""],
  ].join("\r\n");

describe("hostile attachments", () => {
  test("an SVG with a script is served as image/svg+xml, but as a sandboxed, unsniffed attachment", async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>`;
    const sent = await server.api.post(
      `${messagesPath()}/send`,
      { to: ["someone@example.com"], subject: "SVG", text: "x", html: "", attachments: [{ content: Buffer.from(svg).toString("base64"), name: "logo.svg", contentType: "image/svg+xml; charset=utf-8" }] },
      key,
    );
    expect(sent.status).toBe(201);
    const response = await download(`${messagesPath()}/${sent.body.id}/attachments/${sent.body.attachments[0].id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/svg+xml");
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="logo.svg"; filename*=UTF-8''logo.svg`);
    expectSafeDownload(response);
    expect(await response.text()).toBe(svg);
  });

  test("names with quotes, path separators and non-ASCII: no path, a plain ASCII filename, the name kept in filename*", async () => {
    const names = ['a"b.txt', "../../etc/passwd", "C:\\Windows\\x.exe", "naïve 文件.pdf", "   "];
    const sent = await server.api.post(
      `${messagesPath()}/send`,
      { to: ["someone@example.com"], subject: "Names", text: "x", html: "", attachments: names.map((name) => ({ content: Buffer.from("data").toString("base64"), name })) },
      key,
    );
    expect(sent.status).toBe(201);
    const dispositions = [];
    for (const attachment of sent.body.attachments) {
      const response = await download(`${messagesPath()}/${sent.body.id}/attachments/${attachment.id}`);
      expect(response.status).toBe(200);
      expectSafeDownload(response);
      dispositions.push(response.headers.get("content-disposition"));
    }
    expect(dispositions).toEqual([
      `attachment; filename="a_b.txt"; filename*=UTF-8''a%22b.txt`,
      `attachment; filename=".._.._etc_passwd"; filename*=UTF-8''.._.._etc_passwd`,
      `attachment; filename="C:_Windows_x.exe"; filename*=UTF-8''C%3A_Windows_x.exe`,
      `attachment; filename="na_ve __.pdf"; filename*=UTF-8''na%C3%AFve%20%E6%96%87%E4%BB%B6.pdf`,
      `attachment; filename="attachment"; filename*=UTF-8''attachment`,
    ]);
  });

  test("a received name with CR LF in it (RFC 2231 encoded) cannot add a header to the download", async () => {
    const raw = withAttachment("Line break in a name", ["Content-Type: text/html", "Content-Disposition: attachment; filename*=UTF-8''evil%0D%0AX-Injected%3A%201%0D%0A%0D%0A%3Cscript%3E.html"], "<script>alert(1)</script>");
    const message = await receive(raw, "Line break in a name");
    const response = await download(`${messagesPath()}/${message.id}/attachments/${message.attachments[0].id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-injected")).toBeNull();
    expect(response.headers.get("content-type")).toBe("text/html");
    expectSafeDownload(response);
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="evil__X-Injected: 1____<script>.html"; filename*=UTF-8''evil__X-Injected%3A%201____%3Cscript%3E.html`);
  });

  test("a received name of 12,000 characters (RFC 2231) downloads under its first 255, its extension kept; the message keeps it whole", async () => {
    const name = `${"文".repeat(12_000)}.pdf`;
    // RFC 2231 §3: the value in continuations of at most 900 characters a line.
    const continuations = encodeURIComponent(name)
      .match(/.{1,900}(?=%|$)/g)!
      .map((part, n, parts) => ` filename*${n}*=${n === 0 ? "UTF-8''" : ""}${part}${n === parts.length - 1 ? "" : ";"}`);
    const message = await receive(withAttachment("A long name", ["Content-Type: application/pdf", "Content-Disposition: attachment;", ...continuations], "%PDF-1.4"), "A long name");
    expect(message.attachments[0].name).toBe(name);
    const response = await download(`${messagesPath()}/${message.id}/attachments/${message.attachments[0].id}`);
    expect(response.status).toBe(200);
    const disposition = response.headers.get("content-disposition")!;
    expect(disposition.length).toBeLessThan(4_096);
    const shown = decodeURIComponent(/filename\*=UTF-8''(.*)$/.exec(disposition)![1]!);
    expect(shown).toBe(`${"文".repeat(251)}.pdf`);
  });

  test("the raw source is a download too: message/rfc822, {messageId}.eml, nosniff, sandboxed", async () => {
    const sent = await server.api.post(`${messagesPath()}/send`, { to: ["someone@example.com"], subject: "Raw", text: "x", html: "<script>alert(1)</script>" }, key);
    const response = await download(`${messagesPath()}/${sent.body.id}/raw`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("message/rfc822");
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="${sent.body.id}.eml"; filename*=UTF-8''${sent.body.id}.eml`);
    expectSafeDownload(response);
  });
});

describe("inline parts and cid:", () => {
  test("an inline image's Content-ID is its attachment's contentId: the html's cid: URL names an attachment that downloads", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4a40000000049454e44ae426082", "hex");
    const raw = relatedMessage({
      headers: ["From: Sender <sender@sender.test>", `To: ${account.inbox.email}`, "Subject: Inline logo"],
      html: '<p>Our logo: <img src="cid:logo.123@sender.test" alt="logo"></p>',
      image: png,
      contentType: "image/png",
      contentId: "logo.123@sender.test",
      filename: "logo.png",
    });
    const message = await receive(raw, "Inline logo");
    expect(message.attachments).toHaveLength(1);
    const [logo] = message.attachments;
    expect(logo).toMatchObject({ name: "logo.png", contentType: "image/png", contentId: "logo.123@sender.test", inline: true, size: png.length });
    const cid = /src="cid:([^"]+)"/.exec(message.html)![1];
    const target = message.attachments.find((attachment: { contentId?: string }) => attachment.contentId === cid);
    expect(target.id).toBe(logo.id);
    const response = await download(`${messagesPath()}/${message.id}/attachments/${target.id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/png");
    expectSafeDownload(response);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(png);

    // The same ids on every read: the message again, and its thread.
    expect((await server.api.get(`${messagesPath()}/${message.id}`, key)).body.attachments.map((a: { id: string }) => a.id)).toEqual([logo.id]);
    const thread = (await server.api.get(`/v1/inboxes/${account.inbox.id}/threads/${message.threadId}`, key)).body;
    expect(thread.messages[0].attachments.map((a: { id: string }) => a.id)).toEqual([logo.id]);
  });
});
