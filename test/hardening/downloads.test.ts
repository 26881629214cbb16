// Large downloads of an organization that never reads them: each holds one of its places (and the
// bytes in memory) only while the client reads or stays; the fifth at once is 429, and a place
// comes back when its client leaves. A download read to the end is whole. A large message's JSON
// and its thread's are served alike, made a message at a time, and count among the same places.
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { LARGE_DOWNLOADS_PER_ORGANIZATION } from "../../src/http/download";
import { getMessage, getThread } from "../../src/messages/service";
import { eventually, seedOrganization, startTestServer, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";

let server: TestServer;
let apiKey: string;
let organizationId: string;
let rawPath: string;
let source: Buffer;
let inboxId: string;
let messageId: string;
let threadId: string;
let smallMessageId: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey, organizationId } = await seedOrganization(server.app));
  const inbox = (await server.api.post("/v1/inboxes", {}, apiKey)).body;
  // Larger than the loopback socket buffers can take, so that a client that does not read holds it.
  const raw = `From: big@sender.test\r\nTo: ${inbox.email}\r\nSubject: large\r\n\r\n${`${"x".repeat(998)}\r\n`.repeat(20_000)}`;
  await sendMail(server.smtpPort, { from: "big@sender.test", to: [inbox.email], raw });
  const [message] = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body;
  rawPath = `/v1/inboxes/${inbox.id}/messages/${message.id}/raw`;
  source = (await server.app.store.messages.rawSource(message.id))!;
  ({ id: inboxId } = inbox);
  ({ id: messageId, threadId } = message);
  // A second message in the thread, and one the thread's places never count: small.
  const reply = await server.api.post(`/v1/inboxes/${inboxId}/messages/${messageId}/reply`, { text: "got it, thanks", html: "" }, apiKey);
  expect(reply.status).toBe(201);
  smallMessageId = reply.body.id;
}, 60_000);
afterAll(() => server.cleanup());
/** Every test's stalled clients leave at its end, pass or fail, so that no test starts with another's places held. */
const stalled: Socket[] = [];
afterEach(() => {
  for (const socket of stalled.splice(0)) socket.destroy();
});

/**
 * A request whose answer is read no further than its first bytes: the server takes the place
 * before it answers, so once they have come the place is held (on either engine, however long the
 * store took to read the message).
 */
function stalledDownload(path = rawPath, key = apiKey): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.httpPort, "127.0.0.1", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    });
    socket.once("data", (first) => {
      socket.pause();
      if (first.toString("latin1").startsWith("HTTP/1.1 200")) resolve(socket);
      else reject(new Error(`the stalled download was answered ${first.toString("latin1").split("\r\n")[0]}`));
    });
    socket.on("error", reject);
  });
}

const download = (path = rawPath) => fetch(`http://127.0.0.1:${server.httpPort}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });

test("at most 4 large downloads of one organization at once: the fifth is 429 with Retry-After; a client that leaves gives its place back", async () => {
  expect(source.length).toBeGreaterThan(19_000_000);
  for (let i = 0; i < LARGE_DOWNLOADS_PER_ORGANIZATION; i++) stalled.push(await stalledDownload());
  const answer = await download();
  expect(answer.status).toBe(429);
  expect(answer.headers.get("retry-after")).toBe("5");
  expect(((await answer.json()) as { error: string }).error).toContain("Too many large downloads");

  stalled.pop()!.destroy();
  const whole = await eventually("a place to come back", download, (res) => res.status === 200);
  expect(Buffer.from(await whole.arrayBuffer()).equals(source)).toBe(true);
}, 60_000);

test("a large message's JSON and its thread's, made a message at a time, are the text of the whole values", async () => {
  const messagePath = `/v1/inboxes/${inboxId}/messages/${messageId}`;
  const threadPath = `/v1/inboxes/${inboxId}/threads/${threadId}`;
  const message = await download(messagePath);
  expect(message.status).toBe(200);
  const small = await download(`/v1/inboxes/${inboxId}/messages/${smallMessageId}`);
  expect(message.headers.get("content-type")).toBe(small.headers.get("content-type")!);
  expect(await message.text()).toBe(JSON.stringify(await getMessage(server.app, organizationId, inboxId, messageId)));
  const thread = await download(threadPath);
  expect(thread.status).toBe(200);
  const text = await thread.text();
  expect(text).toBe(JSON.stringify(await (await getThread(server.app, organizationId, inboxId, threadId)).whole()));
  expect((JSON.parse(text) as { messages: { id: string }[] }).messages.map((shown) => shown.id)).toEqual([messageId, smallMessageId]);
}, 60_000);

test("a large message's JSON and its thread's hold the organization's places with downloads; a small message needs none", async () => {
  for (let i = 0; i < LARGE_DOWNLOADS_PER_ORGANIZATION - 1; i++) stalled.push(await stalledDownload());
  stalled.push(await stalledDownload(`/v1/inboxes/${inboxId}/threads/${threadId}`));
  for (const path of [rawPath, `/v1/inboxes/${inboxId}/messages/${messageId}`, `/v1/inboxes/${inboxId}/threads/${threadId}`]) {
    expect((await download(path)).status).toBe(429);
  }
  // A change answers the whole message too (it was one buffer at no limit: 48 at once took 1.9 GB);
  // it is made, and the same request again answers it once a place is free.
  const read = () => fetch(`http://127.0.0.1:${server.httpPort}/v1/inboxes/${inboxId}/messages/${messageId}`, { method: "PATCH", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, body: JSON.stringify({ read: true }) });
  expect((await read()).status).toBe(429);
  expect((await server.app.store.messages.find(organizationId, inboxId, messageId))!.read).toBe(true);
  expect((await download(`/v1/inboxes/${inboxId}/messages/${smallMessageId}`)).status).toBe(200);
  stalled.pop()!.destroy();
  const whole = await eventually("a place to come back", () => download(`/v1/inboxes/${inboxId}/threads/${threadId}`), (res) => res.status === 200);
  expect(((await whole.json()) as { messages: unknown[] }).messages).toHaveLength(2);
  const changed = await read();
  expect(changed.status).toBe(200);
  expect(await changed.text()).toBe(JSON.stringify(await getMessage(server.app, organizationId, inboxId, messageId)));
}, 60_000);

test("a revoked key's downloads whose clients stopped reading are cut off at once, and give their places back to the organization", async () => {
  const leaked = (await server.api.post("/v1/api_keys", { name: "leaked" }, apiKey)).body;
  for (let i = 0; i < LARGE_DOWNLOADS_PER_ORGANIZATION; i++) stalled.push(await stalledDownload(rawPath, leaked.key));
  expect((await download()).status).toBe(429);
  expect((await server.api.delete(`/v1/api_keys/${leaked.id}`, apiKey)).status).toBe(200);
  // Before, they held them until the runtime dropped the stalled connections (31 s measured).
  const whole = await eventually("the places back", download, (res) => res.status === 200, 10_000);
  expect(Buffer.from(await whole.arrayBuffer()).equals(source)).toBe(true);
}, 60_000);
