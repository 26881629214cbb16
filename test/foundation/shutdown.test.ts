// The server's stop: INBOXD_SHUTDOWN_TIMEOUT_MS bounds the whole wait for in-flight work, shared by
// the parts as they stop one after another (src/shutdown.ts), not a whole timeout for each.
import { expect, test } from "bun:test";
import * as net from "node:net";
import { register, startTestServer } from "../harness";
import { openSession } from "../smtp/raw-client";

const TIMEOUT_MS = 3000;

test("an SMTP message and an HTTP body that never end hold the stop for one shutdown timeout in all, not one each", async () => {
  const server = await startTestServer({ env: { INBOXD_SHUTDOWN_TIMEOUT_MS: String(TIMEOUT_MS) } });
  const account = await register(server.api);
  // A message still arriving: the SMTP part waits for it until the deadline.
  const session = await openSession(server.smtpPort);
  for (const line of ["EHLO client.example", "MAIL FROM:<alice@sender.test>", `RCPT TO:<${account.inbox.email}>`]) expect((await session.command(line)).code).toBe(250);
  expect((await session.command("DATA")).code).toBe(354);
  session.write("Subject: never ends\r\n\r\nfirst half, ");
  // A request whose body never ends: the HTTP part waits for it until the deadline.
  const request = net.connect(server.httpPort, "127.0.0.1");
  request.on("error", () => {});
  await new Promise((resolve) => request.once("connect", resolve));
  request.write(`POST /v1/inboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${account.apiKey.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`);
  const started = performance.now();
  try {
    await server.stop();
    const elapsed = performance.now() - started;
    // Each part waiting a whole timeout of its own took twice that.
    expect(elapsed).toBeLessThan(1.5 * TIMEOUT_MS);
  } finally {
    request.destroy();
    await server.cleanup();
  }
}, 30_000);
