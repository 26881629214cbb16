// inboxd as a child process: nothing that got its 250 is lost to kill -9, nor stored twice, even
// with a backlog of messages accepted and not analysed yet; SIGTERM lets a message in DATA finish;
// and where port 25 may not be bound the server says so and takes 2525.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createSocket } from "node:dgram";
import { chmodSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { eventually, queryRows, register, repoRoot, startChildServer, tempDir, testEnv, type ApiClient } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { sendMail } from "./mail-client";
import { openSession } from "./raw-client";

let dns: DnsServer;
const dirs: string[] = [];
const freshDir = (label: string) => {
  const dir = tempDir(label);
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  dns = await startDnsServer();
});

afterAll(async () => {
  await dns.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * One client session sending messages back to back (MAIL, RCPT and DATA pipelined, RFC 2920)
 * until the connection goes away; each subject that got its 250 is added to `acknowledged`.
 */
async function sendUntilClosed(port: number, to: string, prefix: string, acknowledged: Set<string>): Promise<void> {
  const session = await openSession(port);
  try {
    await session.command("EHLO client.example");
    for (let i = 0; ; i++) {
      const subject = `${prefix}-${i}`;
      session.write(`MAIL FROM:<alice@sender.test>\r\nRCPT TO:<${to}>\r\nDATA\r\n`);
      for (const expected of [250, 250, 354]) expect((await session.reply()).code).toBe(expected);
      session.write(`From: alice@sender.test\r\nSubject: ${subject}\r\n\r\nMessage ${i}.\r\n.\r\n`);
      if ((await session.reply()).code === 250) acknowledged.add(subject);
    }
  } catch {
    // The server was killed: the connection is gone.
  } finally {
    session.end();
  }
}

async function storedSubjects(api: ApiClient, inboxId: string, apiKey: string): Promise<string[]> {
  const subjects: string[] = [];
  for (let page = 1; ; page++) {
    const list = await api.get(`/v1/inboxes/${inboxId}/messages?per=100&page=${page}`, apiKey);
    expect(list.status).toBe(200);
    subjects.push(...list.body.map((message: { subject: string }) => message.subject));
    if (list.body.length < 100) return subjects;
  }
}

/** Reads the data dir's database (either engine) beside the running server: queryRows needs only the settings of an App. */
const query = <T>(dataDir: string, sql: string): Promise<T[]> => queryRows<T>({ config: loadConfig(testEnv(dataDir)) } as App, sql);

const backlogOf = async (dataDir: string) => (await query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM accepted_inbound"))[0]!.n;

/**
 * Once the server has analysed everything it accepted: every acknowledged subject is stored exactly
 * once, and each stored message has exactly one message.received event.
 */
async function expectEachStoredOnce(dataDir: string, api: ApiClient, inboxId: string, apiKey: string, acknowledged: Set<string>) {
  await eventually("the accepted messages to be analysed", () => backlogOf(dataDir), (n) => n === 0, 30_000);
  const stored = await storedSubjects(api, inboxId, apiKey);
  expect([...acknowledged].filter((subject) => !stored.includes(subject))).toEqual([]);
  expect(stored.filter((subject, i) => stored.indexOf(subject) !== i)).toEqual([]);
  const events = (
    await query<{ messages: number; events: number; messageIds: number }>(
      dataDir,
      `SELECT (SELECT count(*) FROM messages) AS messages, count(*) AS events, count(DISTINCT message_id) AS "messageIds" FROM events WHERE type = 'message.received'`,
    )
  )[0]!;
  expect(events).toEqual({ messages: stored.length, events: stored.length, messageIds: stored.length });
}

/** A DNS server that never answers: every analysis waits on its look-ups, so accepted messages pile up unanalysed. */
async function silentDnsServer() {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { address: `127.0.0.1:${socket.address().port}`, close: () => socket.close() };
}

describe("durability", () => {
  test("kill -9 at a random moment never loses a message that got its 250, nor stores one twice (4 rounds)", async () => {
    const dataDir = freshDir("smtp-crash");
    const env = testEnv(dataDir, { INBOXD_DNS_SERVERS: dns.address });
    let child = await startChildServer(env);
    const account = await register(child.api);
    const acknowledged = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const senders = Array.from({ length: 4 }, (_, session) => sendUntilClosed(child.smtpPort!, account.inbox.email, `r${round}s${session}`, acknowledged));
      // The kill lands after a random number of acknowledged messages, while four sessions have
      // messages in flight, whatever the speed of the machine.
      const killAfter = acknowledged.size + 50 + Math.floor(Math.random() * 70);
      for (const deadline = Date.now() + 10_000; acknowledged.size < killAfter && Date.now() < deadline; ) await Bun.sleep(2);
      await child.kill("SIGKILL");
      await Promise.all(senders);
      child = await startChildServer(env);
      await expectEachStoredOnce(dataDir, child.api, account.inbox.id, account.apiKey.key, acknowledged);
    }
    expect(acknowledged.size).toBeGreaterThan(200);
    expect(await child.kill("SIGTERM")).toBe(0);
  }, 60_000);

  test("kill -9 during a backlog of accepted, unanalysed messages: after the restart each is analysed and stored once, with one event", async () => {
    const dataDir = freshDir("smtp-backlog");
    const silent = await silentDnsServer();
    let child = await startChildServer(testEnv(dataDir, { INBOXD_DNS_SERVERS: silent.address }));
    try {
      const account = await register(child.api);
      const acknowledged = new Set<string>();
      const senders = Array.from({ length: 4 }, (_, session) => sendUntilClosed(child.smtpPort!, account.inbox.email, `backlog-s${session}`, acknowledged));
      await eventually("a backlog of 150 accepted messages", () => backlogOf(dataDir), (n) => n >= 150, 20_000, 5);
      await child.kill("SIGKILL");
      await Promise.all(senders);
      expect(await query(dataDir, "SELECT id FROM messages")).toEqual([]);
      expect(await backlogOf(dataDir)).toBeGreaterThanOrEqual(150);
      // Some of them were being analysed (claimed, their try counted) when the kill came.
      expect((await query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM accepted_inbound WHERE attempts > 0"))[0]!.n).toBeGreaterThan(0);

      child = await startChildServer(testEnv(dataDir, { INBOXD_DNS_SERVERS: dns.address }));
      await expectEachStoredOnce(dataDir, child.api, account.inbox.id, account.apiKey.key, acknowledged);
      expect(acknowledged.size).toBeGreaterThan(100);
      expect(await child.kill("SIGTERM")).toBe(0);
    } finally {
      silent.close();
    }
  }, 60_000);
});

describe("shutdown", () => {
  test("SIGTERM: an idle session gets 421 at once, a message in DATA still gets its 250, then the process exits 0", async () => {
    const dataDir = freshDir("smtp-term");
    const child = await startChildServer(testEnv(dataDir, { INBOXD_DNS_SERVERS: dns.address }));
    const account = await register(child.api);
    const idle = await openSession(child.smtpPort!);
    const busy = await openSession(child.smtpPort!);
    for (const line of ["EHLO client.example", "MAIL FROM:<alice@sender.test>", `RCPT TO:<${account.inbox.email}>`]) expect((await busy.command(line)).code).toBe(250);
    expect((await busy.command("DATA")).code).toBe(354);
    busy.write("From: alice@sender.test\r\nSubject: in flight at shutdown\r\n\r\nfirst half, ");
    const exited = child.kill("SIGTERM");
    expect((await idle.reply()).text).toMatch(/^421 4\.3\.2 /);
    await Bun.sleep(200);
    busy.write("second half\r\n.\r\n");
    expect((await busy.reply()).code).toBe(250);
    expect((await busy.command("NOOP")).code).toBe(421);
    expect(await exited).toBe(0);
    expect(await query(dataDir, "SELECT subject FROM messages WHERE subject = 'in flight at shutdown'")).toHaveLength(1);
    // The stop analyses what was accepted, starting the analysis threads for it: a moment on a busy machine.
  }, 15_000);

  test("SIGTERM: messages that end as its deadline falls are stored exactly when answered 250 (a 421 was said of stored mail)", async () => {
    const dataDir = freshDir("smtp-term-deadline");
    const env = testEnv(dataDir, { INBOXD_DNS_SERVERS: dns.address, INBOXD_SHUTDOWN_TIMEOUT_MS: "1000" });
    const acknowledged: string[] = [];
    let account: Awaited<ReturnType<typeof register>> | undefined;
    for (let round = 0; round < 3; round++) {
      const child = await startChildServer(env);
      account ??= await register(child.api);
      const to = account.inbox.email;
      const sessions = await Promise.all(
        [0, 1, 2].map(async (i) => {
          const session = await openSession(child.smtpPort!);
          for (const line of ["EHLO client.example", "MAIL FROM:<alice@sender.test>", `RCPT TO:<${to}>`]) expect((await session.command(line)).code).toBe(250);
          expect((await session.command("DATA")).code).toBe(354);
          session.write(`From: alice@sender.test\r\nSubject: deadline ${round}-${i}\r\n\r\nfirst half, `);
          return session;
        }),
      );
      const exited = child.kill("SIGTERM");
      await Bun.sleep(990);
      const replies = await Promise.all(
        sessions.map((session) => {
          session.write("second half\r\n.\r\n");
          return session.reply().then((reply) => reply.code, () => 0);
        }),
      );
      expect(await exited).toBe(0);
      replies.forEach((code, i) => code === 250 && acknowledged.push(`deadline ${round}-${i}`));
    }
    const restarted = await startChildServer(env);
    try {
      await eventually("the accepted messages to be analysed", () => backlogOf(dataDir), (n) => n === 0, 30_000);
      const stored = await storedSubjects(restarted.api, account!.inbox.id, account!.apiKey.key);
      expect(stored.filter((subject) => subject.startsWith("deadline")).sort()).toEqual(acknowledged.sort());
    } finally {
      await restarted.kill("SIGTERM");
    }
  }, 60_000);
});

describe("port", () => {
  const isRoot = process.getuid?.() === 0;
  const unprivilegedStart = Number(Bun.spawnSync(["cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start"]).stdout.toString().trim() || 1024);
  const canDropPrivileges = isRoot && Bun.which("setpriv") !== null;
  const reason = unprivilegedStart <= 25 ? "this host lets any user bind port 25" : !isRoot || canDropPrivileges ? "" : "setpriv is missing";
  test.skipIf(reason !== "")(`where port 25 may not be bound: one log line, then 2525${reason ? ` (skipped: ${reason})` : ""}`, async () => {
    const dataDir = freshDir("smtp-port");
    chmodSync(dataDir, 0o777);
    const asNobody = isRoot ? ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] : [];
    const env = { ...testEnv(dataDir), INBOXD_SMTP_PORT: "25", HOME: dataDir, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" };
    const child = await startChildServer(env, { command: [...asNobody, process.execPath, join(repoRoot, "src/main.ts")] });
    try {
      expect(child.smtpPort).toBe(2525);
      const lines = child.output().split("\n").filter((line) => line.includes("port 25 may not be bound"));
      expect(lines).toHaveLength(1);
      const session = await openSession(2525);
      expect((await session.command("EHLO client.example")).code).toBe(250);
      session.end();
    } finally {
      expect(await child.kill("SIGTERM")).toBe(0);
    }
  });
});

describe("single executable", () => {
  const binary = join(repoRoot, "dist/inboxd");
  test.skipIf(!existsSync(binary))("dist/inboxd receives mail with its analysis workers bundled", async () => {
    const cwd = freshDir("smtp-binary");
    const child = await startChildServer(testEnv(join(cwd, "data"), { INBOXD_DNS_SERVERS: dns.address }), { command: [binary], cwd });
    try {
      const account = await register(child.api);
      const sent = await sendMail(child.smtpPort!, { from: "alice@sender.test", to: [account.inbox.email], raw: "From: alice@sender.test\r\nSubject: to the binary\r\n\r\nHi.\r\n" });
      expect(sent.response).toMatch(/^250 /);
      expect(child.output()).not.toContain("analysis worker");
    } finally {
      expect(await child.kill("SIGTERM")).toBe(0);
    }
    // A whole process starts, registers and takes a message: seconds on a busy machine.
  }, 30_000);
});
