// Hardening: a message the parser refuses at once (over 500 MIME parts) while its authentication
// still waits for DNS that never answers. The author's domain the authentication was to be given
// came from the parse, and its failure was left unhandled: it ended the analysis thread, and with
// it every other message's analysis on that thread, tried again only a minute later.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createSocket } from "node:dgram";
import { eventually, seedOrganization, startTestServer, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";

/** A name server that takes every question and answers none. */
const unanswering = createSocket("udp4");
let server: TestServer;
let apiKey: string;
let inbox: { id: string; email: string };
const stops: string[] = [];

beforeAll(async () => {
  await new Promise<void>((resolve) => unanswering.bind(0, "127.0.0.1", resolve));
  server = await startTestServer({ env: { INBOXD_SMTP_WORKERS: "1", INBOXD_DNS_SERVERS: `127.0.0.1:${unanswering.address().port}` } });
  ({ apiKey } = await seedOrganization(server.app));
  inbox = (await server.api.post("/v1/inboxes", {}, apiKey)).body;
  const { error } = server.app.log;
  server.app.log.error = (event, fields) => {
    if (event.includes("worker stopped")) stops.push(event);
    error(event, fields);
  };
});
afterAll(async () => {
  await server.cleanup();
  unanswering.close();
});

const subjects = async () => ((await server.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body as { subject: string }[]).map((m) => m.subject);

test("a message past the parser's limits is stored as it came, and ends no analysis thread: the message beside it is analysed", async () => {
  // First a message whose analysis waits on the same thread for its DNS budget.
  await sendMail(server.smtpPort, { from: "carol@other.test", to: [inbox.email], raw: "From: carol@other.test\r\nSubject: beside it\r\n\r\nHi.\r\n" });
  const parts = Array.from({ length: 501 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join("");
  await sendMail(server.smtpPort, { from: "alice@sender.test", to: [inbox.email], raw: `From: alice@sender.test\r\nSubject: too many parts\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n` });
  // Both within the DNS budget (a third of the 30 s deadline), not after a retry a minute later.
  await eventually("both messages stored", subjects, (stored) => stored.includes("beside it") && stored.includes(""), 25_000, 50);
  expect(stops).toEqual([]);
}, 40_000);
