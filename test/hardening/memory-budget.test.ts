// The message memory's answers at its edge: while a large upload holds it, another large body is
// 503 with Retry-After before it is read, a declared SIZE that does not fit is 452 at MAIL FROM,
// small requests still pass, and once the upload ends the memory is free again. A stranger's
// large body holds none of it: refused before it is read. One organization's bodies, and one SMTP
// client address's transfers, hold at most half of it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { eventually, seedOrganization, startTestServer, type TestServer } from "../harness";
import { openSession } from "../smtp/raw-client";

const MB = 1024 * 1024;
let server: TestServer;
let apiKey: string;
let inbox: { id: string; email: string };

beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_MESSAGE_MEMORY_MB: "1" } });
  apiKey = (await seedOrganization(server.app)).apiKey;
  inbox = (await server.api.post("/v1/inboxes", {}, apiKey)).body;
});
afterAll(() => server.cleanup());

const sendUrl = () => `http://127.0.0.1:${server.httpPort}/v1/inboxes/${inbox.id}/messages/send`;
const sendBody = (attachmentBytes: number) => JSON.stringify({ to: [inbox.email], subject: "s", text: "t", html: "<p>t</p>", attachments: [{ content: Buffer.alloc(attachmentBytes, 1).toString("base64"), name: "a.bin" }] });

/** A send whose body arrives only when the test calls `finish`: its memory is held from its first byte. */
function heldUpload(attachmentBytes: number): { response: Promise<Response>; finish: () => void } {
  const held = sendBody(attachmentBytes);
  let finish!: () => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(held.slice(0, 1000)));
      finish = () => {
        controller.enqueue(new TextEncoder().encode(held.slice(1000)));
        controller.close();
      };
    },
  });
  const response = fetch(sendUrl(), { method: "POST", body, headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "content-length": String(held.length) } });
  return { response, finish };
}

test("while a 2 MB upload holds the memory: 503 with Retry-After for another, 452 for a declared SIZE, small requests pass; then free again", async () => {
  const { response: first, finish } = heldUpload(1.5 * MB);
  const inUse = () => server.app.messageMemory.inUse();
  await eventually("the upload to hold the memory", inUse, (bytes) => bytes > MB);

  const refused = await fetch(sendUrl(), { method: "POST", body: sendBody(MB), headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" } });
  expect(refused.status).toBe(503);
  expect(refused.headers.get("retry-after")).toBe("5");
  expect(((await refused.json()) as { error: string }).error).toContain("try again");

  const session = await openSession(server.smtpPort);
  await session.command("EHLO client.example");
  const declared = await session.command(`MAIL FROM:<a@example.net> SIZE=${2 * MB}`);
  expect(declared.code).toBe(452);
  expect(declared.text).toContain("4.3.1");
  session.end();

  expect((await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).status).toBe(200);
  expect((await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, JSON.parse(sendBody(10)), apiKey)).status).toBe(201);

  finish();
  expect((await first).status).toBe(201);
  await eventually("the memory to be free", inUse, (bytes) => bytes === 0);
  const after = await fetch(sendUrl(), { method: "POST", body: sendBody(MB), headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" } });
  expect(after.status).toBe(201);
}, 30_000);

/**
 * Sends a request's head and the first KiB of the body it declares, never the rest, and returns
 * the answer the server gives meanwhile: a body refused before it is read.
 */
function answerBeforeTheBody(path: string, headers: Record<string, string>, declaredBytes: number): Promise<{ status: number; error: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.httpPort, "127.0.0.1");
    let received = Buffer.alloc(0);
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: *(\d+)/i.exec(text)?.[1];
      if (headEnd < 0 || length === undefined || received.length < headEnd + 4 + Number(length)) return;
      socket.destroy();
      resolve({ status: Number(text.split(" ")[1]), error: JSON.parse(text.slice(headEnd + 4)).error });
    });
    const head = Object.entries({ host: "127.0.0.1", "content-type": "application/json", "content-length": String(declaredBytes), ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`POST ${path} HTTP/1.1\r\n${head.join("")}\r\n{"to": ["${"a".repeat(1000)}`);
  });
}

test("a stranger's large body is refused before it is read, holding none of the memory: 401 without a valid credential, 413 on a route open to anyone", async () => {
  const inUse = () => server.app.messageMemory.inUse();
  const path = new URL(sendUrl()).pathname;
  const strangers: Record<string, string>[] = [{}, { authorization: "Bearer am_not_a_key" }, { authorization: `Bearer ${apiKey}x` }];
  for (const headers of strangers) {
    const answer = await answerBeforeTheBody(path, headers, 1.5 * MB);
    expect(answer.status).toBe(401);
    expect(inUse()).toBe(0);
  }
  expect((await answerBeforeTheBody("/organizations/org_x/api_keys", { authorization: "Bearer not_a_token" }, 1.5 * MB)).status).toBe(401);
  const registration = await answerBeforeTheBody("/auth/register", {}, 100 * 1024);
  expect(registration).toEqual({ status: 413, error: `Request body exceeds ${64 * 1024} bytes` });
  // Nothing was held: a large send right after passes (the memory is 1 MiB).
  expect((await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, JSON.parse(sendBody(200 * 1024)), apiKey)).status).toBe(201);
}, 30_000);

test("a declared SIZE holds nothing before its DATA: clients that declare the largest size and send nothing turn no one away; the data is counted as it arrives", async () => {
  const idlers = await Promise.all([1, 2, 3].map(() => openSession(server.smtpPort)));
  for (const idler of idlers) {
    await idler.command("EHLO idler.example");
    expect((await idler.command(`MAIL FROM:<idle@example.net> SIZE=${25 * MB}`)).code).toBe(250);
    expect((await idler.command(`RCPT TO:<${inbox.email}>`)).code).toBe(250);
  }
  expect(server.app.messageMemory.inUse()).toBe(0);
  const message = `From: a@example.net\r\nTo: ${inbox.email}\r\nSubject: past the idlers\r\n\r\nHello.\r\n`;
  const session = await openSession(server.smtpPort);
  await session.command("EHLO client.example");
  expect((await session.command(`MAIL FROM:<a@example.net> SIZE=${message.length}`)).code).toBe(250);
  expect((await session.command(`RCPT TO:<${inbox.email}>`)).code).toBe(250);
  expect((await session.command("DATA")).code).toBe(354);
  session.write(`${message}.\r\n`);
  expect((await session.reply()).code).toBe(250);
  for (const open of [session, ...idlers]) open.end();
}, 30_000);

test("one organization's large bodies hold at most half the memory, one always: while its upload holds more, its next is 503 and another organization's fits", async () => {
  const other = await seedOrganization(server.app, "Another tenant");
  const otherInbox = (await server.api.post("/v1/inboxes", {}, other.apiKey)).body;
  // Bodies are counted as sent, in base64: about 600 KiB here, 200 KiB below, of the 1 MiB.
  const { response: upload, finish } = heldUpload(450 * 1024);
  await eventually("the upload to hold the memory", () => server.app.messageMemory.inUse(), (bytes) => bytes > 500 * 1024);

  const second = await fetch(sendUrl(), { method: "POST", body: sendBody(150 * 1024), headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" } });
  expect(second.status).toBe(503);
  expect(second.headers.get("retry-after")).toBe("5");
  const otherUrl = `http://127.0.0.1:${server.httpPort}/v1/inboxes/${otherInbox.id}/messages/send`;
  const others = await fetch(otherUrl, { method: "POST", body: sendBody(150 * 1024), headers: { authorization: `Bearer ${other.apiKey}`, "content-type": "application/json" } });
  expect(others.status).toBe(201);

  finish();
  expect((await upload).status).toBe(201);
  await eventually("the memory to be free", () => server.app.messageMemory.inUse(), (bytes) => bytes === 0);
}, 30_000);

/** `bytes` of a message's data (header, then lines of 998 octets), without the end of the data. */
const messageData = (subject: string, bytes: number) => {
  const head = `From: a@example.net\r\nTo: ${inbox.email}\r\nSubject: ${subject}\r\n\r\n`;
  const line = `${"x".repeat(998)}\r\n`;
  return head + line.repeat(Math.ceil((bytes - head.length) / line.length));
};

/** A session from `localAddress` that has begun a message's data; `declaredSize` at MAIL FROM when given. */
async function inData(localAddress: string, declaredSize?: number) {
  const session = await openSession(server.smtpPort, { localAddress });
  await session.command("EHLO client.example");
  expect((await session.command(`MAIL FROM:<a@example.net>${declaredSize ? ` SIZE=${declaredSize}` : ""}`)).code).toBe(250);
  expect((await session.command(`RCPT TO:<${inbox.email}>`)).code).toBe(250);
  expect((await session.command("DATA")).code).toBe(354);
  return session;
}

test("one address's SMTP transfers hold at most half the memory, one always: its next is deferred while another address's message is accepted; once it leaves, its share is free", async () => {
  const holderAddress = "127.0.0.3";
  const inUse = () => server.app.messageMemory.inUse();
  // Left open, as a peer would keep it alive a byte at a time until the data deadline: alone, it may pass its share of 512 KiB.
  const held = await inData(holderAddress);
  held.write(messageData("held", 480 * 1024));
  await eventually("the open transfer to hold its bytes", inUse, (bytes) => bytes >= 480 * 1024);

  // RFC 5321 §3.8: its second transfer, past the share while it arrives, is closed with 421 4.3.1.
  const second = await inData(holderAddress);
  second.write(messageData("second", 64 * 1024));
  expect((await second.reply()).text).toMatch(/^421 4\.3\.1 /);
  await second.closed();
  // RFC 1870 §6.1: a SIZE declared past the share is 452 4.3.1 at MAIL FROM.
  const declaring = await openSession(server.smtpPort, { localAddress: holderAddress });
  await declaring.command("EHLO client.example");
  expect((await declaring.command(`MAIL FROM:<a@example.net> SIZE=${64 * 1024}`)).text).toMatch(/^452 4\.3\.1 /);

  // Another address's 300 KiB fits beside the holder's: 780 KiB of the 1 MiB.
  const other = await inData("127.0.0.2");
  other.write(`${messageData("from another address", 300 * 1024)}.\r\n`);
  expect((await other.reply()).code).toBe(250);
  other.end();

  held.end();
  await eventually("the memory to be free", inUse, (bytes) => bytes === 0);
  expect((await declaring.command(`MAIL FROM:<a@example.net> SIZE=${64 * 1024}`)).code).toBe(250);
  expect((await declaring.command(`RCPT TO:<${inbox.email}>`)).code).toBe(250);
  expect((await declaring.command("DATA")).code).toBe(354);
  declaring.write(`${messageData("after the holder left", 60 * 1024)}.\r\n`);
  expect((await declaring.reply()).code).toBe(250);
  declaring.end();
}, 30_000);
