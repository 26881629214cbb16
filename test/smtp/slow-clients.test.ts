// Slow clients that are never idle: the idle timeout restarts on every byte, so a client that
// trickles its bytes would keep a connection for as long as it likes. A command line has a
// deadline of its own (RFC 5321 §4.5.3.2), and so has the whole session.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { insertInbox } from "../../src/inboxes/service";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { openSession, startTransaction, type RawSession } from "./raw-client";

const COMMAND_TIMEOUT_MS = 300;
const SESSION_TIMEOUT_MS = 500;
// Far beyond any test here: whatever closes a session in these tests, it is not the idle timer.
const IDLE_TIMEOUT_MS = 60_000;
const TRICKLE_MS = 100;

let dns: DnsServer;
/** A short command deadline, a long session limit. */
let commandServer: TestServer;
/** A short session limit, a long command deadline. */
let sessionServer: TestServer;

beforeAll(async () => {
  dns = await startDnsServer();
  const env = { INBOXD_DNS_SERVERS: dns.address, INBOXD_SMTP_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS) };
  [commandServer, sessionServer] = await Promise.all([
    startTestServer({ env: { ...env, INBOXD_SMTP_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) } }),
    startTestServer({ env: { ...env, INBOXD_SMTP_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS) } }),
  ]);
  for (const server of [commandServer, sessionServer]) {
    const { organizationId } = await seedOrganization(server.app);
    await server.app.store.transaction((tx) => insertInbox(server.app, tx, organizationId, { email: "bob@inboxd.test" }));
  }
});

afterAll(async () => {
  await Promise.all([commandServer.cleanup(), sessionServer.cleanup()]);
  await dns.close();
});

/** Once what the server accepted is analysed and stored (the inbound queue). */
async function storedSubjects(server: TestServer): Promise<string[]> {
  await server.app.queues.runDueNow("inbound");
  return (await queryRows<{ subject: string }>(server.app, "SELECT subject FROM messages")).map((row) => row.subject);
}

/** Writes `text` one byte every `intervalMs` (for ever, cycling, with `repeat`) until stopped; `done` resolves once every byte of one pass is out. */
function trickle(session: RawSession, text: string, options: { intervalMs?: number; repeat?: boolean } = {}): { stop(): void; done: Promise<void> } {
  let index = 0;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const timer = setInterval(() => {
    if (session.isClosed()) return stop();
    session.write(text[index % text.length]);
    index++;
    if (index === text.length && !options.repeat) stop();
  }, options.intervalMs ?? TRICKLE_MS);
  const stop = () => {
    clearInterval(timer);
    finish();
  };
  return { stop, done };
}

describe("command deadline (INBOXD_SMTP_COMMAND_TIMEOUT_MS)", () => {
  test("a command line trickled one byte at a time, never idle, is cut off with 421 at the deadline", async () => {
    const session = await openSession(commandServer.smtpPort);
    const started = performance.now();
    const bytes = trickle(session, "EHLO x", { repeat: true });
    try {
      const reply = await session.reply(COMMAND_TIMEOUT_MS * 10);
      expect(reply.text).toMatch(/^421 4\.4\.2 .*command line took too long to arrive/);
      expect(performance.now() - started).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS - 20);
      await session.closed();
    } finally {
      bytes.stop();
      session.end();
    }
  }, 20_000);

  test("a partial line left over after a complete one is timed from the chunk that brought it", async () => {
    const session = await openSession(commandServer.smtpPort);
    const started = performance.now();
    session.write("NOOP\r\nNOOP");
    // Slower than before, so that a deadline counted only from the next byte would show.
    const bytes = trickle(session, " ", { intervalMs: 250, repeat: true });
    try {
      expect((await session.reply()).code).toBe(250);
      expect((await session.reply(COMMAND_TIMEOUT_MS * 10)).text).toMatch(/^421 4\.4\.2 .*command line took too long to arrive/);
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS - 20);
      expect(elapsed).toBeLessThan(COMMAND_TIMEOUT_MS + 200);
      await session.closed();
    } finally {
      bytes.stop();
      session.end();
    }
  }, 20_000);

  test("normal commands still work: split lines within the deadline, and silence before a command does not count", async () => {
    const session = await openSession(commandServer.smtpPort);
    try {
      expect((await session.command("EHLO client.example")).code).toBe(250);
      // Each line takes about 200 ms, together far more than the deadline: the deadline is per line.
      for (let i = 0; i < 4; i++) {
        await trickle(session, "NOOP\r\n", { intervalMs: 40 }).done;
        expect((await session.reply()).code).toBe(250);
      }
      // Silence after a reply is the idle timer's business, not the command deadline's.
      await Bun.sleep(COMMAND_TIMEOUT_MS * 2);
      expect((await session.command("NOOP")).code).toBe(250);
      expect(session.isClosed()).toBe(false);
    } finally {
      session.end();
    }
  }, 20_000);

  test("message data trickled for longer than the command deadline is not cut off by it", async () => {
    const session = await openSession(commandServer.smtpPort);
    try {
      await startTransaction(session, "alice@sender.test", ["bob@inboxd.test"]);
      expect((await session.command("DATA")).code).toBe(354);
      await trickle(session, "Subject: slow but steady\r\n\r\nHello.\r\n", { intervalMs: 20 }).done;
      expect((await session.command(".")).code).toBe(250);
      expect(await storedSubjects(commandServer)).toContain("slow but steady");
    } finally {
      session.end();
    }
  }, 20_000);
});

describe("session limit (INBOXD_SMTP_SESSION_TIMEOUT_MS)", () => {
  test("a client that keeps the session busy with NOOPs is closed with 421 at the limit", async () => {
    const started = performance.now();
    const session = await openSession(sessionServer.smtpPort);
    const noops = setInterval(() => session.isClosed() || session.write("NOOP\r\n"), TRICKLE_MS);
    try {
      let reply = await session.reply();
      while (reply.code === 250 && performance.now() - started < SESSION_TIMEOUT_MS * 10) reply = await session.reply();
      expect(reply.text).toMatch(/^421 4\.4\.2 .*session time limit reached/);
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 20);
      expect(elapsed).toBeLessThan(SESSION_TIMEOUT_MS * 4);
      await session.closed();
    } finally {
      clearInterval(noops);
      session.end();
    }
  }, 20_000);

  test("a message whose data is arriving when the limit passes gets its reply, then the 421", async () => {
    const started = performance.now();
    const session = await openSession(sessionServer.smtpPort);
    try {
      await startTransaction(session, "alice@sender.test", ["bob@inboxd.test"]);
      expect((await session.command("DATA")).code).toBe(354);
      session.write("Subject: in flight at the limit\r\n\r\n");
      // The client keeps sending its message until well past the session limit.
      while (performance.now() - started < SESSION_TIMEOUT_MS * 2) {
        await trickle(session, "x\r\n", { intervalMs: 30 }).done;
        expect(session.isClosed()).toBe(false);
      }
      session.write(".\r\n");
      // Pipelined after the message: the session is over, so this must not run.
      session.write("MAIL FROM:<alice@sender.test>\r\n");
      expect((await session.reply()).code).toBe(250);
      expect((await session.reply()).text).toMatch(/^421 4\.4\.2 .*session time limit reached/);
      await session.closed();
      expect(await storedSubjects(sessionServer)).toContain("in flight at the limit");
    } finally {
      session.end();
    }
  }, 20_000);
});
