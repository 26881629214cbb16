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

test(`an inbox of ${MESSAGES} messages is deleted a slice at a time: others see it emptying, then gone with its threads`, async () => {
  const { app } = server;
  const { organizationId, apiKey } = await seedOrganization(app, "Large");
  const inbox = await createInbox(server, apiKey);
  const record = (await app.store.inboxes.find(organizationId, inbox.id))!;
  for (let first = 0; first < MESSAGES; first += 100) {
    const batch = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const raw = Buffer.from(`From: sender${first + i}@example.com\r\nTo: ${inbox.email}\r\nSubject: Order ${first + i}\r\nMessage-ID: <order-${first + i}@example.com>\r\n\r\nDetails.\r\n`);
        return { raw, parsed: await parseMessage(raw) };
      }),
    );
    await app.store.transaction(async (tx) => {
      for (const { raw, parsed } of batch) await storeReceivedMessage(app, tx, { inbox: record, parsed, raw });
    });
  }
  expect(await messagesIn(inbox.id)).toBe(MESSAGES);

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
