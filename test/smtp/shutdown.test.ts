// The SMTP server's stop: a session whose message has all come and is being committed gets its
// answer (250) before the 421 that closes it, even when the commit outlasts the shutdown's
// deadline; a session still sending its message is cut off, and what it sent is not stored.
import { expect, test } from "bun:test";
import { eventually, register, startTestServer } from "../harness";
import { openSession } from "./raw-client";

test("a stop spares the sessions whose message is being committed, past its deadline; it cuts off the others, storing none of theirs", async () => {
  const first = await startTestServer({ env: { INBOXD_SHUTDOWN_TIMEOUT_MS: "200" } });
  const account = await register(first.api);
  // Commits of accepted mail take 500 ms: the stop's deadline falls while they run.
  const batched = first.app.store.transactionBatched;
  first.app.store.transactionBatched = async (work) => {
    await Bun.sleep(500);
    return batched(work);
  };
  const open = async (subject: string) => {
    const session = await openSession(first.smtpPort);
    for (const line of ["EHLO client.example", "MAIL FROM:<alice@sender.test>", `RCPT TO:<${account.inbox.email}>`]) expect((await session.command(line)).code).toBe(250);
    expect((await session.command("DATA")).code).toBe(354);
    session.write(`From: alice@sender.test\r\nSubject: ${subject}\r\n\r\nfirst half, `);
    return session;
  };
  const committing = await Promise.all(["committing 1", "committing 2"].map(open));
  const unfinished = await open("unfinished");
  const answers = committing.map((session) => {
    session.write("second half\r\n.\r\n");
    return session.reply();
  });
  // The stop starts while both messages are being committed.
  await Bun.sleep(50);
  await first.stop();
  expect((await Promise.all(answers)).map((reply) => reply.code)).toEqual([250, 250]);
  expect((await unfinished.reply()).code).toBe(421);

  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    const subjects = async () => ((await second.api.get(`/v1/inboxes/${account.inbox.id}/messages?per=100`, account.apiKey.key)).body as { subject: string }[]).map((message) => message.subject).sort();
    await eventually("the committed messages to be stored", subjects, (stored) => stored.length >= 2);
    expect(await subjects()).toEqual(["committing 1", "committing 2"]);
  } finally {
    await second.cleanup();
    await first.cleanup();
  }
}, 30_000);
