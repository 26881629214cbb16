// Long answers to a client that takes each piece at once: a long thread's messages, an event
// stream read from the start. Each piece is made in a turn of the event loop of its own, so that
// the other requests and SMTP sessions run in between (before, 3,000 messages of one thread held
// them 0.5-1.5 s, 52,000 events 0.6-0.8 s). Counted here as the turns that pass while one is read.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { newId } from "../../src/ids";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { createInbox } from "../messages/helpers";

let server: TestServer;
let organizationId: string;
let apiKey: string;
beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_SEND_LIMIT: "100000" } });
  ({ organizationId, apiKey } = await seedOrganization(server.app, "Long answers"));
});
afterAll(() => server.cleanup());

/** Counts the turns of the event loop from now: `turn()` is how many passed so far, until `stop()`. */
function turnCounter() {
  let turns = 0;
  let counting = true;
  const count = () => {
    turns++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);
  return { turn: () => turns, stop: () => (counting = false) };
}

test("a thread of 600 messages, served in pieces: a turn for each", async () => {
  const inbox = await createInbox(server, apiKey);
  const original = (await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, { to: [inbox.email], subject: "Long thread", text: "First.", html: "" }, apiKey)).body as { id: string; threadId: string };
  for (let i = 0; i < 599; i++) expect((await server.api.post(`/v1/inboxes/${inbox.id}/messages/${original.id}/reply`, { text: `Reply ${i}: ${"a line of the answer, ".repeat(12)}`, html: "" }, apiKey)).status).toBe(201);
  const counter = turnCounter();
  const thread = await server.api.get(`/v1/inboxes/${inbox.id}/threads/${original.threadId}`, apiKey);
  counter.stop();
  const messages = (thread.body as { messages: unknown[] }).messages.length;
  expect(messages).toBeGreaterThanOrEqual(600);
  expect(counter.turn()).toBeGreaterThan(messages / 2);
}, 60_000);

test("an event stream read from the start, 5,000 events: each page read in a turn of its own", async () => {
  const now = server.clock.now();
  for (let i = 0; i < 5_000; i += 500) {
    const rows = Array.from({ length: 500 }, () => [newId("evt"), organizationId, JSON.stringify({ name: "x".repeat(100) }), now]);
    await queryRows(server.app, `INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES ${rows.map(() => "(?, ?, 'inbox.updated', NULL, NULL, ?, ?)").join(", ")}`, ...rows.flat());
  }
  // The turn each page is read in (the stream looks the method up on every page).
  const counter = turnCounter();
  const events = server.app.store.events;
  const readAfter = events.readAfter;
  const pagesReadIn: number[] = [];
  events.readAfter = (...args) => (pagesReadIn.push(counter.turn()), readAfter(...args));
  try {
    const response = await fetch(`${server.api.baseUrl}/v1/events?since=evt_${"0".repeat(24)}`, { headers: { authorization: `Bearer ${apiKey}` } });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = 0;
    let text = "";
    while (seen < 5_000) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const lines = text.split("\n");
      text = lines.pop()!;
      seen += lines.filter((line) => line.startsWith("id: ")).length;
    }
    await reader.cancel();
  } finally {
    events.readAfter = readAfter;
    counter.stop();
  }
  expect(pagesReadIn.length).toBeGreaterThanOrEqual(50);
  // Before, a client that took each event at once had every page read in the same turn or a few.
  expect(new Set(pagesReadIn).size).toBe(pagesReadIn.length);
}, 60_000);
