// Large downloads of an organization that never reads them: each holds one of its places (and the
// bytes in memory) only while the client reads or stays; the fifth at once is 429, and a place
// comes back when its client leaves. A download read to the end is whole.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { LARGE_DOWNLOADS_PER_ORGANIZATION } from "../../src/http/download";
import { eventually, seedOrganization, startTestServer, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";

let server: TestServer;
let apiKey: string;
let rawPath: string;
let source: Buffer;

beforeAll(async () => {
  server = await startTestServer();
  apiKey = (await seedOrganization(server.app)).apiKey;
  const inbox = (await server.api.post("/v1/inboxes", {}, apiKey)).body;
  // Larger than the loopback socket buffers can take, so that a client that does not read holds it.
  const raw = `From: big@sender.test\r\nTo: ${inbox.email}\r\nSubject: large\r\n\r\n${`${"x".repeat(998)}\r\n`.repeat(20_000)}`;
  await sendMail(server.smtpPort, { from: "big@sender.test", to: [inbox.email], raw });
  const [message] = (await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body;
  rawPath = `/v1/inboxes/${inbox.id}/messages/${message.id}/raw`;
  source = (await server.app.store.messages.rawSource(message.id))!;
}, 60_000);
afterAll(() => server.cleanup());

/** A request whose answer is never read. */
function stalledDownload(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.httpPort, "127.0.0.1", () => {
      socket.write(`GET ${rawPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\n\r\n`);
      socket.pause();
      resolve(socket);
    });
    socket.on("error", reject);
  });
}

const download = () => fetch(`http://127.0.0.1:${server.httpPort}${rawPath}`, { headers: { authorization: `Bearer ${apiKey}` } });

test("at most 4 large downloads of one organization at once: the fifth is 429 with Retry-After; a client that leaves gives its place back", async () => {
  expect(source.length).toBeGreaterThan(19_000_000);
  const stalled: Socket[] = [];
  for (let i = 0; i < LARGE_DOWNLOADS_PER_ORGANIZATION; i++) stalled.push(await stalledDownload());
  const refused = await eventually("the fifth download to be refused", async () => (await download()).status, (status) => status === 429);
  expect(refused).toBe(429);
  const answer = await download();
  expect(answer.headers.get("retry-after")).toBe("5");
  expect(((await answer.json()) as { error: string }).error).toContain("Too many large downloads");

  stalled.pop()!.destroy();
  const whole = await eventually("a place to come back", download, (res) => res.status === 200);
  expect(Buffer.from(await whole.arrayBuffer()).equals(source)).toBe(true);
  for (const socket of stalled) socket.destroy();
}, 60_000);
