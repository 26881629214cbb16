/**
 * `GET /v1/inboxes/{inboxId}/messages/{messageId}/attachments/{attachmentId}`: the bytes, always
 * as a download that no browser renders at the API's origin, and only for the owning organization.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually, register, startTestServer, type Registered, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";

let server: TestServer;
let owner: Registered;
let stranger: Registered;
let messagePath: string;
let attachments: { id: string; name: string }[];

const page = `<!doctype html><script>document.cookie = "ran=1"</script><p>résumé</p>`;
const name = 'résumé "final".html';

const download = (path: string, key: string) => fetch(`${server.api.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });

beforeAll(async () => {
  server = await startTestServer();
  [owner, stranger] = [await register(server.api), await register(server.api)];
  const raw = [
    "From: Mallory <mallory@sender.test>",
    `To: ${owner.inbox.email}`,
    "Subject: Two files",
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="part"',
    "",
    "--part",
    "Content-Type: text/plain",
    "",
    "Attached.",
    "--part",
    `Content-Type: text/html; charset=utf-8`,
    `Content-Disposition: attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
    "Content-Transfer-Encoding: base64",
    "",
    Buffer.from(page).toString("base64"),
    "--part",
    "Content-Type: text/html; charset=utf-8\r\n\tx-evil=1",
    "Content-Disposition: attachment",
    "",
    "<p>no name</p>",
    "--part--",
    "",
  ].join("\r\n");
  await sendMail(server.smtpPort, { from: "mallory@sender.test", to: [owner.inbox.email], raw });
  const list = await eventually("the message is stored", async () => (await server.api.get(`/v1/inboxes/${owner.inbox.id}/messages`, owner.apiKey.key)).body, (body) => body?.length === 1);
  messagePath = `/v1/inboxes/${owner.inbox.id}/messages/${list[0].id}`;
  attachments = (await server.api.get(messagePath, owner.apiKey.key)).body.attachments;
  // A server on a database of its own, two accounts, and a message analysed: more than the default 5 s on a busy machine.
}, 30_000);

afterAll(() => server?.cleanup());

describe("attachment download", () => {
  test("each attachment in a message has an id", () => {
    expect(attachments).toHaveLength(2);
    for (const attachment of attachments) expect(attachment.id).toMatch(/^att_/);
  });

  test("the bytes with their media type, as an attachment (RFC 6266, RFC 8187 name), not sniffed, sandboxed", async () => {
    const response = await download(`${messagePath}/attachments/${attachments[0]!.id}`, owner.apiKey.key);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html");
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="r_sum_ _final_.html"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.html`);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("content-security-policy")).toBe("sandbox");
    expect(await response.text()).toBe(page);
  });

  test("a file without a name is still an attachment", async () => {
    const response = await download(`${messagePath}/attachments/${attachments[1]!.id}`, owner.apiKey.key);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="attachment"; filename*=UTF-8''attachment`);
    expect(response.headers.get("content-type")).toBe("text/html");
  });

  test("another organization or an unknown id: 404; no key: 401", async () => {
    const path = `${messagePath}/attachments/${attachments[0]!.id}`;
    const foreign = await download(path, stranger.apiKey.key);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: "Attachment not found" });
    expect((await download(`/v1/inboxes/${stranger.inbox.id}/messages/${messagePath.split("/").at(-1)}/attachments/${attachments[0]!.id}`, stranger.apiKey.key)).status).toBe(404);
    expect((await download(`${messagePath}/attachments/att_unknown`, owner.apiKey.key)).status).toBe(404);
    expect((await download(path, "ik_" + "0".repeat(32))).status).toBe(401);
  });
});
