// The store's page of events for the stream: its limits at their edges, the filters, where the
// next read continues, and webhook test events left out.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { testEventIdPrefix } from "../../src/events/names";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";

let server: TestServer;
let organizationId: string;
const ids: string[] = [];

beforeAll(async () => {
  server = await startTestServer();
  ({ organizationId } = await seedOrganization(server.app));
  const emit = (type: "inbox.created" | "inbox.updated", inboxId: string, size: number) =>
    server.app.store.events.emit({ organizationId, type, inboxId, payload: { text: "x".repeat(size) } }, server.clock.now());
  // Five events whose bodies are 1000 characters each (with `{"text":""}` around the text).
  for (const [type, inboxId] of [["inbox.created", "inb_a"], ["inbox.updated", "inb_b"], ["inbox.created", "inb_a"], ["inbox.updated", "inb_a"], ["inbox.created", "inb_b"]] as const) {
    ids.push(await emit(type, inboxId, 1000 - '{"text":""}'.length));
  }
  await queryRows(server.app, "INSERT INTO events (id, organization_id, type, payload, created_at) VALUES (?1, ?2, 'message.received', '{}', ?3)", `${testEventIdPrefix}0123456789ab`, organizationId, server.clock.now());
});
afterAll(() => server.cleanup());

const read = (options: Partial<Parameters<TestServer["app"]["store"]["events"]["readAfter"]>[1]> = {}) =>
  server.app.store.events.readAfter(organizationId, { afterId: null, limit: 100, maxChars: 1 << 20, ...options });

test("all events in id order; the test endpoint's are not among them, and the position is the newest", async () => {
  const page = await read();
  expect(page.events.map((e) => e.id)).toEqual(ids);
  expect(page).toMatchObject({ nextAfterId: ids[4], more: false });
  expect(await server.app.store.events.newestId(organizationId)).toBe(ids[4]!);
});

test("the count limit at its edge", async () => {
  expect(await read({ limit: 5 })).toMatchObject({ nextAfterId: ids[4], more: true });
  const cut = await read({ limit: 4 });
  expect(cut.events.map((e) => e.id)).toEqual(ids.slice(0, 4));
  expect(cut).toMatchObject({ nextAfterId: ids[3], more: true });
  const rest = await read({ afterId: cut.nextAfterId, limit: 4 });
  expect(rest.events.map((e) => e.id)).toEqual([ids[4]]);
  expect(rest.more).toBe(false);
});

test("the size budget at its edge, and one event even when it alone passes it", async () => {
  expect((await read({ maxChars: 2000 })).events).toHaveLength(2);
  expect((await read({ maxChars: 2001 })).events).toHaveLength(3);
  const one = await read({ maxChars: 1 });
  expect(one.events.map((e) => e.id)).toEqual([ids[0]]);
  expect(one).toMatchObject({ nextAfterId: ids[0], more: true });
});

test("filters: the position still moves past what they leave out", async () => {
  const updated = await read({ types: ["inbox.updated"] });
  expect(updated.events.map((e) => e.id)).toEqual([ids[1], ids[3]]);
  expect(updated).toMatchObject({ nextAfterId: ids[4], more: false });
  const inboxA = await read({ inboxId: "inb_a", afterId: ids[0]! });
  expect(inboxA.events.map((e) => e.id)).toEqual([ids[2], ids[3]]);
  expect(inboxA.nextAfterId).toBe(ids[4]!);
  const none = await read({ inboxId: "inb_none" });
  expect(none).toEqual({ events: [], nextAfterId: ids[4]!, more: false });
});

test("another organization's reads see none of these, and keep their own position", async () => {
  const other = await seedOrganization(server.app, "Other");
  expect(await server.app.store.events.readAfter(other.organizationId, { afterId: null, limit: 100, maxChars: 1 << 20 })).toEqual({ events: [], nextAfterId: null, more: false });
  expect(await server.app.store.events.readAfter(other.organizationId, { afterId: ids[2]!, limit: 100, maxChars: 1 << 20 })).toEqual({ events: [], nextAfterId: ids[2]!, more: false });
});
