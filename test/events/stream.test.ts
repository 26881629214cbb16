// GET /v1/events over a real port: order, ids and payloads, resume after a real disconnect,
// filters, tenancy, heartbeats, the per-organization limit and the end of streams at shutdown.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { newId } from "../../src/ids";
import { eventually, queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { openStream, type SseEvent, type SseStream } from "./sse-client";

let server: TestServer;
let owner: { organizationId: string; apiKey: string };
let stranger: { organizationId: string; apiKey: string };
const streams: SseStream[] = [];

beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_EVENT_HEARTBEAT_MS: "100", INBOXD_EVENT_STREAMS_PER_ORG: "3" } });
  owner = await seedOrganization(server.app, "Owner");
  stranger = await seedOrganization(server.app, "Stranger");
});
afterAll(() => server.cleanup());
// Each test's streams are closed after it, so that none counts against the next one's limit.
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  await openStreamsReach(owner.organizationId, 0);
  await openStreamsReach(stranger.organizationId, 0);
});

async function open(path = "/v1/events", key = owner.apiKey, headers: Record<string, string> = {}) {
  const stream = await openStream(server.api.baseUrl, path, key, headers);
  streams.push(stream);
  return stream;
}

/** Waits until the organization's open streams number `count` (a closed one is noticed when its socket closes). */
async function openStreamsReach(organizationId: string, count: number) {
  const deadline = Date.now() + 5000;
  while (server.app.eventStreams.count(organizationId) !== count) {
    if (Date.now() > deadline) throw new Error(`open streams: ${server.app.eventStreams.count(organizationId)}, expected ${count}`);
    await Bun.sleep(10);
  }
}

async function createInbox(key = owner.apiKey, name?: string) {
  const created = await server.api.post("/v1/inboxes", name ? { name } : {}, key);
  expect(created.status).toBe(201);
  return created.body as { id: string; email: string };
}

const payload = (event: SseEvent) => JSON.parse(event.data);

describe("a stream", () => {
  test("starts with retry and carries the next events in order: id, name and the webhook body", async () => {
    const before = await createInbox();
    const stream = await open();
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toBe("text/event-stream");
    expect(stream.headers.get("cache-control")).toBe("no-store");
    const first = await createInbox();
    const renamed = await server.api.patch(`/v1/inboxes/${first.id}`, { name: "Renamed" }, owner.apiKey);
    const second = await createInbox();
    const events = await stream.waitForEvents(3);
    expect(stream.retries).toEqual([3000]);
    expect(events.map((e) => e.event)).toEqual(["inbox.created", "inbox.updated", "inbox.created"]);
    expect(events.map((e) => payload(e).data.id)).toEqual([first.id, first.id, second.id]);
    expect(events.map((e) => payload(e).data.id)).not.toContain(before.id);
    // Ids sort in the order the events were committed; each is the body's id.
    const ids = events.map((e) => e.id!);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
    for (const event of events) expect(event.id).toMatch(/^evt_[0-9a-f]{24}$/);
    expect(payload(events[1]!)).toEqual({ id: events[1]!.id, event: "inbox.updated", timestamp: expect.stringMatching(/Z$/), data: renamed.body, payload: renamed.body, inboxId: first.id });
  });

  test("is the same body a webhook gets, byte for byte", async () => {
    const { startWebhookReceiver } = await import("../peers/webhook-receiver");
    const receiver = startWebhookReceiver();
    try {
      const hook = await server.api.post("/v1/webhooks", { url: receiver.url("/hook"), events: ["inbox.created"] }, owner.apiKey);
      expect(hook.status).toBe(201);
      const stream = await open("/v1/events?events=inbox.created");
      await createInbox();
      const [event] = await stream.waitForEvents(1);
      const [request] = await receiver.waitFor(1);
      expect(event!.data).toBe(request!.body);
      await server.api.delete(`/v1/webhooks/${hook.body.id}`, owner.apiKey);
    } finally {
      await receiver.close();
    }
  });

  test("resumes after a real disconnect with Last-Event-ID: exactly the missed events, then live ones", async () => {
    const stream = await open();
    await createInbox();
    await createInbox();
    const seen = await stream.waitForEvents(2);
    stream.close();
    const missed = [await createInbox(), await createInbox(), await createInbox()];
    const resumed = await open("/v1/events", owner.apiKey, { "last-event-id": seen[1]!.id! });
    const replayed = await resumed.waitForEvents(3);
    expect(replayed.map((e) => payload(e).data.id)).toEqual(missed.map((inbox) => inbox.id));
    const live = await createInbox();
    const all = await resumed.waitForEvents(4);
    expect(payload(all[3]!).data.id).toBe(live.id);
    // Nothing twice, nothing out of order.
    const ids = [...seen, ...all].map((e) => e.id!);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  test("a stream that saw no event yet resumes from where it started: its position comes first", async () => {
    await createInbox();
    const quiet = await open();
    await quiet.waitForComment("ping");
    const position = quiet.lastEventId!;
    expect(position).toMatch(/^evt_[0-9a-f]{24}$/);
    quiet.close();
    const missed = await createInbox();
    const resumed = await open("/v1/events", owner.apiKey, { "last-event-id": position });
    expect(payload((await resumed.waitForEvents(1))[0]!).data.id).toBe(missed.id);
  });

  test("a stream of an organization with no event kept starts at a position below every event: resumed from it, nothing is missed and nothing is reset", async () => {
    const empty = await seedOrganization(server.app, "No events yet");
    const quiet = await open("/v1/events", empty.apiKey);
    await quiet.waitForComment("ping");
    expect(quiet.lastEventId).toBe(`evt_${"0".repeat(24)}`);
    quiet.close();
    const missed = await createInbox(empty.apiKey);
    const resumed = await open("/v1/events", empty.apiKey, { "last-event-id": quiet.lastEventId! });
    const [first] = await resumed.waitForEvents(1);
    expect(first!.event).toBe("inbox.created");
    expect(payload(first!).data.id).toBe(missed.id);
  });

  test("a resume id later than any node's clock could make (a mangled id) begins with a reset, then every event kept, oldest first", async () => {
    const org = await seedOrganization(server.app, "Mangled resume id");
    const kept = await createInbox(org.apiKey);
    const stream = await open("/v1/events", org.apiKey, { "last-event-id": `evt_ffffffffffff${"0".repeat(12)}` });
    const [reset, first] = await stream.waitForEvents(2);
    expect(reset!.event).toBe("reset");
    expect(JSON.parse(reset!.data).reason).toMatch(/later than any event/);
    expect(payload(first!).data.id).toBe(kept.id);
    // An id a little ahead of this node's clock (another node's) is a position, as any other.
    const ahead = `evt_${(server.clock.now() + 60_000).toString(16).padStart(12, "0")}${"0".repeat(12)}`;
    const quiet = await open("/v1/events", org.apiKey, { "last-event-id": ahead });
    await quiet.waitForComment("ping");
    expect(quiet.events).toEqual([]);
  });

  test("a resume id of an event stored while the clock ran hours ahead, before it was set back, is a position: the next event follows it, with no reset", async () => {
    const org = await seedOrganization(server.app, "Clock set back");
    await createInbox(org.apiKey);
    const stored = (await server.app.store.events.newestId(org.organizationId))!;
    const setBack = 3 * 60 * 60_000;
    server.clock.advance(-setBack);
    try {
      const stream = await open("/v1/events", org.apiKey, { "last-event-id": stored });
      await stream.waitForComment("ping");
      const next = await createInbox(org.apiKey);
      const [first] = await stream.waitForEvents(1);
      expect(first!.event).toBe("inbox.created");
      expect(payload(first!).data.id).toBe(next.id);
    } finally {
      server.clock.advance(setBack);
    }
  });

  test("a large event reaches each of several streams whole, and again on a later stream", async () => {
    const first = await open();
    const second = await open();
    // Written in pieces: pairs of UTF-16 halves on either side of the "a", so that wherever a piece ends, some pair is at its edge.
    const big = `${"\u{1F600}".repeat(70_000)}a${"\u{1F600}".repeat(70_000)}`;
    await server.app.store.transaction((tx) => tx.events.emit({ organizationId: owner.organizationId, type: "inbox.updated", payload: { big } }, server.clock.now()));
    for (const stream of [first, second]) {
      const [event] = await stream.waitForEvents(1);
      expect(payload(event!).data.big).toBe(big);
    }
    const later = await open("/v1/events", owner.apiKey, { "last-event-id": `evt_${"0".repeat(24)}` });
    await eventually("the large event on a later stream", () => later.events, (events) => events.some((event) => payload(event).data.big === big));
  });

  test("?since= resumes alike, and Last-Event-ID wins over it", async () => {
    const stream = await open();
    const a = await createInbox();
    const b = await createInbox();
    const [first, second] = await stream.waitForEvents(2);
    expect(payload(first!).data.id).toBe(a.id);
    const since = await open(`/v1/events?since=${first!.id}`);
    expect(payload((await since.waitForEvents(1))[0]!).data.id).toBe(b.id);
    const both = await open(`/v1/events?since=${first!.id}`, owner.apiKey, { "last-event-id": second!.id! });
    const c = await createInbox();
    expect(payload((await both.waitForEvents(1))[0]!).data.id).toBe(c.id);
  });

  test("filters by event name and by inbox", async () => {
    const inbox = await createInbox();
    const byName = await open("/v1/events?events=inbox.updated,inbox.deleted");
    const byInbox = await open(`/v1/events?inboxId=${inbox.id}`);
    const other = await createInbox();
    await server.api.patch(`/v1/inboxes/${other.id}`, { name: "Other" }, owner.apiKey);
    await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: "Mine" }, owner.apiKey);
    await server.api.delete(`/v1/inboxes/${inbox.id}`, owner.apiKey);
    expect((await byName.waitForEvents(3)).map((e) => [e.event, payload(e).data.id])).toEqual([
      ["inbox.updated", other.id],
      ["inbox.updated", inbox.id],
      ["inbox.deleted", inbox.id],
    ]);
    expect((await byInbox.waitForEvents(2)).map((e) => e.event)).toEqual(["inbox.updated", "inbox.deleted"]);
    expect(byInbox.events.every((e) => payload(e).inboxId === inbox.id)).toBe(true);
  });

  test("refuses malformed resume ids, unknown event names, another organization's inbox and a missing key", async () => {
    const foreign = await createInbox(stranger.apiKey);
    const cases: [string, Record<string, string>, string, number, RegExp][] = [
      ["/v1/events?since=evt_nope", {}, owner.apiKey, 422, /^since: /],
      ["/v1/events", { "last-event-id": "42" }, owner.apiKey, 422, /^Last-Event-ID: /],
      ["/v1/events?events=message.opened", {}, owner.apiKey, 422, /^events: unknown event name 'message.opened'/],
      ["/v1/events?events=,", {}, owner.apiKey, 422, /^events: /],
      [`/v1/events?inboxId=${foreign.id}`, {}, owner.apiKey, 404, /Inbox not found/],
      ["/v1/events", {}, "", 401, /Authorization/],
    ];
    for (const [path, headers, key, status, error] of cases) {
      const refused = await open(path, key, headers);
      expect(refused.status).toBe(status);
      expect((refused.errorBody as { error: string }).error).toMatch(error);
    }
    expect(server.app.eventStreams.count(owner.organizationId)).toBe(0);
  });
});

describe("tenancy", () => {
  test("another organization's events never appear, even resumed from one of its ids", async () => {
    const watcher = await open();
    const theirs = await open("/v1/events", stranger.apiKey);
    const foreign = await createInbox(stranger.apiKey);
    const [foreignEvent] = await theirs.waitForEvents(1);
    expect(payload(foreignEvent!).data.id).toBe(foreign.id);
    const mine = await createInbox();
    const [event] = await watcher.waitForEvents(1);
    expect(payload(event!).data.id).toBe(mine.id);
    const resumed = await open(`/v1/events?since=${foreignEvent!.id}`);
    const next = await createInbox();
    const replayed = await resumed.waitForEvents(2);
    expect(replayed.map((e) => payload(e).data.id)).toEqual([mine.id, next.id]);
    expect(watcher.events.concat(resumed.events).some((e) => payload(e).data.organizationId === stranger.organizationId)).toBe(false);
  });
});

describe("keeping the connection", () => {
  test("a quiet stream sends a `: ping` comment after the heartbeat interval", async () => {
    const stream = await open();
    await stream.waitForComment("ping");
    expect(stream.events).toEqual([]);
  });

  test("an event committed by another connection (another process) arrives with the next poll", async () => {
    const stream = await open();
    const id = newId("evt");
    await queryRows(server.app, "INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES (?1, ?2, 'inbox.updated', NULL, NULL, '{\"elsewhere\":true}', ?3)", id, owner.organizationId, server.clock.now());
    const [event] = await stream.waitForEvents(1);
    expect(event!.id).toBe(id);
    expect(payload(event!).data).toEqual({ elsewhere: true });
  });
});

describe("a stream filtered by an inbox", () => {
  test("ends once that inbox is deleted, after its last events: inbox.deleted, or none of a name the filter leaves out", async () => {
    const inbox = await createInbox();
    const byInbox = await open(`/v1/events?inboxId=${inbox.id}`);
    const byInboxAndName = await open(`/v1/events?inboxId=${inbox.id}&events=message.received`);
    const unfiltered = await open();
    await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: "Going" }, owner.apiKey);
    expect((await server.api.delete(`/v1/inboxes/${inbox.id}`, owner.apiKey)).status).toBe(200);
    await Promise.all([byInbox.ended, byInboxAndName.ended]);
    expect(byInbox.events.map((e) => e.event)).toEqual(["inbox.updated", "inbox.deleted"]);
    expect(byInboxAndName.events).toEqual([]);
    await openStreamsReach(owner.organizationId, 1);
    await createInbox();
    expect((await unfiltered.waitForEvents(3)).map((e) => e.event)).toEqual(["inbox.updated", "inbox.deleted", "inbox.created"]);
    const reconnect = await open(`/v1/events?inboxId=${inbox.id}`, owner.apiKey, { "last-event-id": byInbox.lastEventId! });
    expect(reconnect.status).toBe(404);
  });
});

describe("credentials", () => {
  test("a stream ends once its key is revoked, at once: it shows nothing that happens after the revocation", async () => {
    const created = await server.api.post("/v1/api_keys", { name: "streaming" }, owner.apiKey);
    expect(created.status).toBe(201);
    const stream = await open("/v1/events", created.body.key);
    expect(stream.status).toBe(200);
    expect((await server.api.delete(`/v1/api_keys/${created.body.id}`, owner.apiKey)).status).toBe(200);
    // Before, the key was looked up again only a poll interval (5 s) after its last look-up.
    await createInbox();
    await stream.ended;
    expect(stream.events).toEqual([]);
    await openStreamsReach(owner.organizationId, 0);
  });

  test("a key revoked while its stream reads a page: the page, which may hold events committed after the revocation, is not shown", async () => {
    const created = await server.api.post("/v1/api_keys", { name: "reading" }, owner.apiKey);
    const stream = await open("/v1/events", created.body.key);
    await stream.waitForComment("ping");
    const events = server.app.store.events;
    const readAfter = events.readAfter;
    let revoked = false;
    // The revocation, then a new event, both committed while the stream's read is under way (as
    // while it waited for a turn of a busy event loop).
    events.readAfter = async (...args) => {
      if (!revoked) {
        revoked = true;
        expect((await server.api.delete(`/v1/api_keys/${created.body.id}`, owner.apiKey)).status).toBe(200);
        await createInbox(owner.apiKey, "after the revocation");
      }
      return readAfter(...args);
    };
    try {
      await createInbox(owner.apiKey, "before the revocation");
      await stream.ended;
      expect(revoked).toBe(true);
      expect(stream.events.map((event) => payload(event).data.name)).not.toContain("after the revocation");
    } finally {
      events.readAfter = readAfter;
    }
  });
});

describe("a revoked key's client that stopped reading", () => {
  test("in the middle of a large page: its stream ends at once, and gives back its place and its count", async () => {
    const created = (await server.api.post("/v1/api_keys", { name: "stalled" }, owner.apiKey)).body;
    const position = (await server.app.store.events.newestId(owner.organizationId)) ?? `evt_${"0".repeat(24)}`;
    const events = server.app.store.events;
    const readAfter = events.readAfter;
    let reads = 0;
    events.readAfter = (...args) => (reads++, readAfter(...args));
    const socket = connect(server.httpPort, "127.0.0.1");
    socket.on("error", () => {});
    try {
      socket.pause();
      socket.write(`GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${created.key}\r\nLast-Event-ID: ${position}\r\n\r\n`);
      await openStreamsReach(owner.organizationId, 1);
      // 24 MB of events: more than the socket buffers take, so that the stream waits in a large page.
      const text = JSON.stringify({ text: "x".repeat(2 << 20) });
      for (let n = 0; n < 12; n++) {
        await queryRows(server.app, "INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES ($1, $2, 'inbox.updated', NULL, NULL, $3, $4)", newId("evt"), owner.organizationId, text, server.clock.now());
      }
      server.app.eventStreams.wake();
      // Until the reads stop: the socket buffers are full and the stream waits for its client.
      await eventually("the stream to stall", async () => reads, (count) => count > 0);
      for (let seen = -1; reads !== seen; await Bun.sleep(300)) seen = reads;
      expect(server.app.eventStreams.count(owner.organizationId)).toBe(1);
      expect((await server.api.delete(`/v1/api_keys/${created.id}`, owner.apiKey)).status).toBe(200);
      await openStreamsReach(owner.organizationId, 0);
    } finally {
      events.readAfter = readAfter;
      socket.destroy();
    }
  });
});

describe("a slow client", () => {
  test("holds up its own stream: pages are read only as the connection takes them, and all arrive in order after", async () => {
    const megabyte = "x".repeat(1 << 20);
    const insert = (id: string, organizationId: string, payload: string, now: number) =>
      queryRows(server.app, "INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES (?1, ?2, 'inbox.updated', NULL, NULL, ?3, ?4)", id, organizationId, payload, now);
    await createInbox();
    const position = await server.app.store.events.newestId(owner.organizationId);
    const ids = Array.from({ length: 40 }, () => newId("evt"));
    for (const id of ids) await insert(id, owner.organizationId, JSON.stringify({ text: megabyte }), server.clock.now());
    // Counts the stream's reads of the store (it looks the method up on every page).
    const events = server.app.store.events;
    const readAfter = events.readAfter;
    let reads = 0;
    events.readAfter = (...args) => (reads++, readAfter(...args));
    const socket = connect(server.httpPort, "127.0.0.1");
    try {
      socket.pause();
      socket.write(`GET /v1/events?since=${position} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${owner.apiKey}\r\n\r\n`);
      for (const deadline = Date.now() + 5000; reads === 0 && Date.now() < deadline; ) await Bun.sleep(20);
      expect(reads).toBeGreaterThan(0);
      // Until the reads stop: the socket buffers are full.
      let seen = -1;
      while (reads !== seen) {
        seen = reads;
        await Bun.sleep(300);
      }
      // 40 MB of events; the kernel's and the server's buffers hold a few MB of them.
      expect(reads).toBeLessThan(15);
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (text += chunk));
      socket.resume();
      for (const deadline = Date.now() + 10_000; !text.includes(`id: ${ids[39]}`) && Date.now() < deadline; ) await Bun.sleep(20);
      expect([...text.matchAll(/^id: (evt_\w+)\nevent: /gm)].map((match) => match[1])).toEqual(ids);
    } finally {
      events.readAfter = readAfter;
      socket.destroy();
    }
  }, 20_000);
});

describe("large pages", () => {
  /** A client that reads its stream's first bytes of an event, then stops reading: its stream holds the event. */
  async function stalledClient(key: string, since: string, on = server) {
    const socket = connect(on.httpPort, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8");
    const started = new Promise<void>((resolve) =>
      socket.on("data", (chunk: string) => {
        text += chunk;
        if (text.includes("event: inbox.updated")) resolve();
      }),
    );
    socket.write(`GET /v1/events?since=${since} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await started;
    // Paused here, not in the handler: Bun's socket paused in its data handler never resumed.
    socket.pause();
    return socket;
  }

  test("an organization's streams hold two at a time; the others wait until a client has read its page, and other organizations do not", async () => {
    await createInbox();
    await createInbox(stranger.apiKey);
    const ownerPosition = (await server.app.store.events.newestId(owner.organizationId))!;
    const strangerPosition = (await server.app.store.events.newestId(stranger.organizationId))!;
    // More than the kernel's socket buffers take from a client that does not read.
    const big = "x".repeat(16 << 20);
    const emit = (organizationId: string) => server.app.store.transaction((tx) => tx.events.emit({ organizationId, type: "inbox.updated", payload: { big } }, server.clock.now()));
    await emit(owner.organizationId);
    await emit(stranger.organizationId);
    const holders = [await stalledClient(owner.apiKey, ownerPosition), await stalledClient(owner.apiKey, ownerPosition)];
    try {
      const waiting = await open(`/v1/events?since=${ownerPosition}`);
      const other = await open(`/v1/events?since=${strangerPosition}`, stranger.apiKey);
      const [otherEvent] = await other.waitForEvents(1, 10_000);
      expect(payload(otherEvent!).data.big).toBe(big);
      // Heartbeats come while it waits: the stream is open, its event held back.
      await waiting.waitForComment("ping");
      const pings = waiting.comments.length;
      await eventually("two more heartbeats", () => waiting.comments.length, (count) => count >= pings + 2);
      expect(waiting.events).toEqual([]);
      holders[0]!.resume();
      const [event] = await waiting.waitForEvents(1, 10_000);
      expect(payload(event!).data.big).toBe(big);
    } finally {
      for (const holder of holders) holder.destroy();
    }
    // A client that went away gives its place back.
    await openStreamsReach(owner.organizationId, 1);
    const after = await open(`/v1/events?since=${ownerPosition}`);
    const [event] = await after.waitForEvents(1, 10_000);
    expect(payload(event!).data.big).toBe(big);
  }, 30_000);

  test("a place given back passes down the line in order, past a stream whose key was revoked meanwhile, which ends", async () => {
    const roomy = await startTestServer({ env: { INBOXD_EVENT_HEARTBEAT_MS: "100", INBOXD_EVENT_STREAMS_PER_ORG: "10" } });
    const org = await seedOrganization(roomy.app, "Line");
    const opened: SseStream[] = [];
    const holders: ReturnType<typeof connect>[] = [];
    try {
      const position = `evt_${"0".repeat(24)}`;
      const big = "x".repeat(16 << 20);
      await roomy.app.store.transaction((tx) => tx.events.emit({ organizationId: org.organizationId, type: "inbox.updated", payload: { big } }, roomy.clock.now()));
      for (let i = 0; i < 2; i++) holders.push(await stalledClient(org.apiKey, position, roomy));
      const second = await roomy.api.post("/v1/api_keys", { name: "second" }, org.apiKey);
      const inLine = async (key: string) => {
        const stream = await openStream(roomy.api.baseUrl, `/v1/events?since=${position}`, key);
        opened.push(stream);
        await stream.waitForComment("ping");
        return stream;
      };
      const revokedFirst = await inLine(second.body.key);
      const next = await inLine(org.apiKey);
      const last = await inLine(org.apiKey);
      expect((await roomy.api.delete(`/v1/api_keys/${second.body.id}`, org.apiKey)).status).toBe(200);
      await revokedFirst.ended;
      expect(revokedFirst.events).toEqual([]);
      const newcomer = await inLine(org.apiKey);
      // One place goes round (the other stays with a client that never reads): each gets the event whole, in the order they came.
      const arrivals: SseStream[] = [];
      const arrived = [next, last, newcomer].map(async (stream) => {
        const [event] = await stream.waitForEvents(1, 20_000);
        arrivals.push(stream);
        expect(payload(event!).data.big).toBe(big);
      });
      holders.shift()!.destroy();
      await Promise.all(arrived);
      expect(arrivals).toEqual([next, last, newcomer]);
    } finally {
      for (const stream of opened) stream.close();
      for (const socket of holders) socket.destroy();
      await roomy.cleanup();
    }
  }, 30_000);
});

describe("the per-organization limit", () => {
  test("at the limit a stream is refused with 429 and Retry-After; another organization is not; a closed one frees its place", async () => {
    const held = [await open(), await open(), await open()];
    expect(held.map((s) => s.status)).toEqual([200, 200, 200]);
    const refused = await open();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((refused.errorBody as { error: string }).error).toMatch(/at most 3/);
    const elsewhere = await open("/v1/events", stranger.apiKey);
    expect(elsewhere.status).toBe(200);
    held[0]!.close();
    await openStreamsReach(owner.organizationId, 2);
    const again = await open();
    expect(again.status).toBe(200);
  });
});

describe("shutdown", () => {
  test("stopping the server ends open streams at once", async () => {
    const own = await startTestServer();
    try {
      const org = await seedOrganization(own.app);
      const stream = await openStream(own.api.baseUrl, "/v1/events", org.apiKey);
      expect(stream.status).toBe(200);
      const started = performance.now();
      await own.stop();
      await stream.ended;
      // Well under INBOXD_SHUTDOWN_TIMEOUT_MS (10 s), which an open stream would otherwise use up.
      expect(performance.now() - started).toBeLessThan(5000);
    } finally {
      await own.cleanup();
    }
  });
});
