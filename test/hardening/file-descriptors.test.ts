// A server whose connections have taken its file descriptors: the runtime ends the whole process
// when a worker thread cannot get its own, so a pool whose thread would start then works on the
// main thread. The message that needed an analysis thread is accepted, analysed and shown, and
// the server lives on (before: exit 1 and every session dropped).
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { eventually, inboxdCommand, register, startChildServer, tempDir, testEnv } from "../harness";
import { openSession, startTransaction } from "../smtp/raw-client";

const LIMIT = 256;

test(`under a limit of ${LIMIT} open files, filled by idle SMTP connections: a message is accepted and analysed on the main thread, and the server lives on`, async () => {
  const child = await startChildServer(testEnv(tempDir("descriptors"), { INBOXD_SMTP_MAX_CONNECTIONS: "10000", INBOXD_SMTP_MAX_CONNECTIONS_PER_IP: "10000" }), {
    command: ["bash", "-c", `ulimit -n ${LIMIT} && exec "$@"`, "--", ...inboxdCommand()],
  });
  const fillers: Socket[] = [];
  try {
    const { apiKey, inbox } = await register(child.api);
    const session = await openSession(child.smtpPort!);
    await startTransaction(session, "alice@sender.test", [inbox.email]);
    const openFiles = () => readdirSync(`/proc/${child.proc.pid}/fd`).length;
    // Idle connections until the server takes no more: its table is full.
    let before = -1;
    while (openFiles() !== before) {
      before = openFiles();
      for (let i = 0; i < 32; i++) {
        const socket = connect(child.smtpPort!, "127.0.0.1");
        socket.on("error", () => {});
        fillers.push(socket);
      }
      await Bun.sleep(100);
    }
    expect(openFiles()).toBeGreaterThan(LIMIT - 8);
    expect((await session.command("DATA")).code).toBe(354);
    expect((await session.command("Subject: crowded\r\n\r\nHello.\r\n.")).code).toBe(250);
    // The analysis runs on the main thread; once descriptors are free again, the message shows.
    await eventually("the analysis's log line", () => child.output(), (output) => output.includes("workers not started: the process is near its limit of open files"));
    for (const socket of fillers.splice(0)) socket.destroy();
    const subjects = await eventually(
      "the message shown",
      async () => ((await child.api.get(`/v1/inboxes/${inbox.id}/messages`, apiKey.key)).body as { subject: string }[]).map((message) => message.subject),
      (found) => found.includes("crowded"),
    );
    expect(subjects).toContain("crowded");
    expect(child.proc.exitCode).toBeNull();
    session.end();
  } finally {
    for (const socket of fillers) socket.destroy();
    if (child.proc.exitCode === null) await child.kill("SIGTERM");
  }
}, 60_000);
