// Deleting an inbox of many messages: its messages go a slice per transaction before the inbox,
// so the deletion holds no one else up (one statement for 20,000 messages held the event loop,
// every organization's requests and SMTP greetings, 0.9 s).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { deleteMessagesInSlices } from "../../src/inboxes/service";
import { parseMessage } from "../../src/mail/parse";
import { storeReceivedMessage } from "../../src/messages/receive";
import { eventsLockKey } from "../../src/store/postgres/events";
import { eventually, onPostgres, queryRow, seedOrganization, type TestServer } from "../harness";
import { createInbox, startMessageServer, validSend } from "../messages/helpers";

const MESSAGES = 1_500;

let server: TestServer;
beforeAll(async () => {
  server = await startMessageServer();
});
afterAll(() => server.cleanup());

const messagesIn = async (inboxId: string) => Number((await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM messages WHERE inbox_id = ?", inboxId))!.n);

/** An inbox of `MESSAGES` messages: the first 100 one thread (each a reply to the first), every other one a thread of its own. */
async function largeInbox(name: string) {
  const { app } = server;
  const { organizationId, apiKey } = await seedOrganization(app, name);
  const inbox = await createInbox(server, apiKey);
  const record = (await app.store.inboxes.find(organizationId, inbox.id))!;
  for (let first = 0; first < MESSAGES; first += 100) {
    const batch = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const n = first + i;
        const reply = n > 0 && n < 100 ? "In-Reply-To: <order-0@example.com>\r\n" : "";
        const raw = Buffer.from(`From: sender${n}@example.com\r\nTo: ${inbox.email}\r\nSubject: Order ${n < 100 ? 0 : n}\r\nMessage-ID: <order-${n}@example.com>\r\n${reply}\r\nDetails.\r\n`);
        return { raw, parsed: await parseMessage(raw) };
      }),
    );
    await app.store.transaction(async (tx) => {
      for (const { raw, parsed } of batch) await storeReceivedMessage(app, tx, { inbox: record, parsed, raw });
    });
  }
  expect(await messagesIn(inbox.id)).toBe(MESSAGES);
  expect(Number((await queryRow<{ n: number }>(app, "SELECT max(message_count) AS n FROM threads WHERE inbox_id = ?", inbox.id))!.n)).toBe(100);
  return { organizationId, apiKey, inbox };
}

test(`an inbox of ${MESSAGES} messages is deleted a slice at a time: others see it emptying, then gone with its threads`, async () => {
  const { app } = server;
  const { apiKey, inbox } = await largeInbox("Large");

  let deleted = false;
  const deletion = server.api.delete(`/v1/inboxes/${inbox.id}`, apiKey).finally(() => (deleted = true));
  const seen = new Set<number>();
  while (!deleted) {
    seen.add(await messagesIn(inbox.id));
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect((await deletion).status).toBe(200);
  // Counts between all and none: the deletion gave way to other work while it ran.
  expect([...seen].some((n) => n > 0 && n < MESSAGES)).toBe(true);
  expect(await messagesIn(inbox.id)).toBe(0);
  expect(Number((await queryRow<{ n: number }>(app, "SELECT count(*) AS n FROM threads WHERE inbox_id = ?", inbox.id))!.n)).toBe(0);
  expect((await server.api.get(`/v1/inboxes/${inbox.id}`, apiKey)).status).toBe(404);
});

test("cut off after a few slices (a crash), the inbox's counts are right: each thread gone with its last message, a thread left with some counts them", async () => {
  const { app } = server;
  const { organizationId, apiKey, inbox } = await largeInbox("Cut off");
  for (let slice = 0; slice < 3; slice++) await app.store.transaction((tx) => tx.inboxes.deleteMessages(organizationId, inbox.id, 64));
  const left = await messagesIn(inbox.id);
  expect(left).toBeLessThan(MESSAGES);
  expect((await server.api.get(`/v1/inboxes/${inbox.id}`, apiKey)).body.messageCount).toBe(left);
  const miscounted = await queryRow<{ n: number }>(app, "SELECT count(*) AS n FROM threads WHERE inbox_id = ? AND message_count <> (SELECT count(*) FROM messages WHERE thread_id = threads.id)", inbox.id);
  expect(Number(miscounted!.n)).toBe(0);
  expect((await server.api.delete(`/v1/inboxes/${inbox.id}`, apiKey)).status).toBe(200);
});

test.skipIf(!onPostgres)("on PostgreSQL a slice waits for its organization's events first, as the outbound queue's turn does before the delivery and message it updates: no deadlock", async () => {
  const { app } = server;
  const { organizationId, apiKey } = await seedOrganization(app, "Outcomes");
  const inbox = await createInbox(server, apiKey);
  const sent = (await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, validSend(), apiKey)).body as { id: string };
  const delivery = (await queryRow<{ id: string }>(app, "SELECT id FROM deliveries WHERE message_id = ?", sent.id))!;
  const other = new SQL(app.config.databaseUrl!, { max: 1 });
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  // The queue's turn recording an outcome: the events, the delivery, then (later) the message.
  const outcome = other.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${eventsLockKey(organizationId)}, 0))`;
    await tx`UPDATE deliveries SET updated_at = updated_at WHERE id = ${delivery.id}`;
    holding();
    await released;
    await tx`UPDATE messages SET status = status WHERE id = ${sent.id}`;
    return "outcome recorded";
  });
  try {
    await held;
    const slices = deleteMessagesInSlices(app, organizationId, inbox.id).then(() => "slices done", (error: Error) => `slices failed: ${error.message}`);
    await eventually("the slice waiting for a lock the turn holds", async () => Number((await queryRow<{ n: number }>(app, "SELECT count(*) AS n FROM pg_locks WHERE NOT granted"))!.n), (n) => n > 0);
    release();
    expect(await Promise.all([outcome, slices])).toEqual(["outcome recorded", "slices done"]);
  } finally {
    release();
    await other.close();
  }
});
