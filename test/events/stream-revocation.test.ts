// A key revoked while its event streams are at a moment of their own: opening, looking the key up
// (an answer read before the deletion on its way back, as a PostgreSQL round trip is), or
// stalled in a large page. The real server; the store's key look-ups are held where the test
// says, each answering with what the database held when it was asked.
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { Clock } from "../../src/clock";
import type { Config } from "../../src/config";
import { EventStreams } from "../../src/events/stream";
import { sha256Hex } from "../../src/ids";
import type { Logger } from "../../src/log";
import type { Store } from "../../src/store";
import { eventually, seedOrganization, startTestServer, type TestServer } from "../harness";
import { openStream, type SseStream } from "./sse-client";

let server: TestServer;
// The key is looked up at each heartbeat at most: 100 ms, so that a stream's own poll comes soon.
beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_EVENT_HEARTBEAT_MS: "100" } });
});
afterAll(() => server.cleanup());
const streams: SseStream[] = [];
afterEach(() => {
  for (const stream of streams.splice(0)) stream.close();
});

async function open(key: string) {
  const stream = await openStream(server.api.baseUrl, "/v1/events", key);
  streams.push(stream);
  return stream;
}

const newKey = async (ownerKey: string, name: string) => (await server.api.post("/v1/api_keys", { name }, ownerKey)).body as { id: string; key: string };

/**
 * Holds the answers of `key`'s look-ups from now on: each is read at once, and given back when
 * `release()` is called; `asked` counts them.
 */
function holdLookups(key: string) {
  const accounts = server.app.store.accounts;
  const find = accounts.findApiKeyByHash;
  const hash = sha256Hex(key);
  const held: Promise<unknown>[] = [];
  const released = Promise.withResolvers<void>();
  accounts.findApiKeyByHash = async (asked) => {
    if (asked !== hash) return find(asked);
    const answer = find(asked);
    held.push(answer);
    await released.promise;
    return answer;
  };
  return {
    asked: () => held.length,
    release() {
      accounts.findApiKeyByHash = find;
      released.resolve();
    },
  };
}

test("a key revoked while one of the organization's streams opens: the deletion answers 200, and the stream shows nothing after it", async () => {
  const owner = await seedOrganization(server.app, "Opening");
  const other = await newKey(owner.apiKey, "other");
  const events = server.app.store.events;
  const newestId = events.newestId;
  const reached = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  // The stream's read of the newest id, as it opens, takes a while (a round trip, a busy connection).
  events.newestId = async (organizationId) => {
    reached.resolve();
    await released.promise;
    return newestId(organizationId);
  };
  const opening = open(other.key);
  try {
    await reached.promise;
    events.newestId = newestId;
    expect((await server.api.delete(`/v1/api_keys/${other.id}`, owner.apiKey)).status).toBe(200);
  } finally {
    events.newestId = newestId;
    released.resolve();
  }
  const stream = await opening;
  await server.api.post("/v1/inboxes", { name: "after the revocation" }, owner.apiKey);
  await stream.ended;
  expect(stream.events).toEqual([]);
});

test("a key revoked while its stream's own look-up is on its way back: the answer read before is not taken, and no later event is shown", async () => {
  const owner = await seedOrganization(server.app, "Polling");
  const reader = await newKey(owner.apiKey, "reader");
  const stream = await open(reader.key);
  await stream.waitForComment("ping");
  const lookups = holdLookups(reader.key);
  try {
    await eventually("the stream's poll", async () => lookups.asked(), (asked) => asked > 0);
    expect((await server.api.delete(`/v1/api_keys/${reader.id}`, owner.apiKey)).status).toBe(200);
    await server.api.post("/v1/inboxes", { name: "after the revocation" }, owner.apiKey);
  } finally {
    lookups.release();
  }
  await stream.ended;
  expect(stream.events).toEqual([]);
});

test("two keys revoked one after the other: a stream of the second whose client reads no more is cut off, though the look-up the first began read its key before it went", async () => {
  // EventStreams alone, over a store of what it reads: each key look-up is read when asked and
  // answered when the test says, as a PostgreSQL round trip is.
  let secondKeyStored = true;
  const lookups: { answer: Promise<unknown>; release(): void }[] = [];
  const store = {
    events: { newestId: async () => undefined, readAfter: async () => ({ events: [], nextAfterId: null, more: false }) },
    inboxes: { find: async () => ({}) },
    accounts: {
      findApiKeyByHash: () => {
        const read = secondKeyStored ? { organizationId: "org_two", id: "key_second", lastUsedAt: Date.now() } : undefined;
        const answered = Promise.withResolvers<unknown>();
        lookups.push({ answer: answered.promise, release: () => answered.resolve(read) });
        return answered.promise;
      },
      touchApiKey: async () => {},
    },
  } as unknown as Store;
  const silent = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
  const streams = new EventStreams(store, new Clock(), silent, { eventRetentionDays: 7, eventStreamsPerOrg: 10, eventHeartbeatMs: 60_000 } as Config);
  const body = await streams.start({ organizationId: "org_two", apiKey: "ik_second" });
  // The client takes the stream's first lines (retry, position), then reads no more.
  await body.getReader().read();
  streams.keyRevoked("org_two");
  expect(lookups).toHaveLength(1);
  secondKeyStored = false;
  streams.keyRevoked("org_two");
  for (const lookup of lookups) lookup.release();
  await eventually("the stream cut off", async () => streams.count("org_two"), (count) => count === 0);
});
