// A webhook changed (another URL, disabled, deleted) while the queue holds deliveries it claimed
// ahead for it: once the change is answered, nothing more goes to the old URL but the tries in
// flight at that moment. The receiver holds the old URL's requests until the change is answered,
// so the tries in flight are exactly the first round (INBOXD_WEBHOOK_CONCURRENCY_PER_URL of them).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomToken } from "../../src/ids";
import { insertInbox } from "../../src/inboxes/service";
import { eventually, queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";

const perUrl = 4;
const events = 40;

let server: TestServer;
const arrivals: { path: string; eventId: string }[] = [];
let release = () => {};
let held = Promise.resolve();
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const path = new URL(request.url).pathname;
    arrivals.push({ path, eventId: ((await request.json()) as { id: string }).id });
    if (path.endsWith("/old")) await held;
    // An endpoint being retired; endpoints that fail.
    if (path === "/retired/old") return new Response("gone", { status: 410 });
    return path.startsWith("/failing/") ? new Response("down", { status: 503 }) : new Response("ok");
  },
});

beforeAll(async () => {
  server = await startTestServer({ env: { INBOXD_WEBHOOK_CONCURRENCY_PER_URL: String(perUrl) } });
});
afterAll(async () => {
  release();
  await server.cleanup();
  await receiver.stop(true);
});

const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
const to = (path: string) => arrivals.filter((a) => a.path === path);

const createInboxes = (organizationId: string, count: number) =>
  server.app.store.transaction(async (tx) => {
    for (let i = 0; i < count; i++) await insertInbox(server.app, tx, organizationId, { email: `${randomToken(8)}@inboxd.test` });
  });

/**
 * A webhook on `/{name}/old` with `events` inbox.created deliveries queued for it, its first round
 * held at the receiver. One event answered at once first: the queue claims ahead only for a URL
 * that answers promptly (src/webhooks/url-load.ts).
 */
async function backlog(name: string) {
  const organization = await seedOrganization(server.app);
  const created = await server.api.post("/v1/webhooks", { url: url(`/${name}/old`), events: ["inbox.created"] }, organization.apiKey);
  expect(created.status).toBe(201);
  await createInboxes(organization.organizationId, 1);
  await eventually("the prompt first delivery", () => to(`/${name}/old`).length, (n) => n === 1);
  held = new Promise((resolve) => (release = resolve));
  await createInboxes(organization.organizationId, events);
  await eventually("the first round at the old URL", () => to(`/${name}/old`).length, (n) => n >= 1 + perUrl);
  return { ...organization, webhookId: created.body.id as string };
}

/** Another organization's event delivered after the change: the queue has run turns since it. */
async function queueTurnedSince(name: string) {
  const other = await seedOrganization(server.app);
  expect((await server.api.post("/v1/webhooks", { url: url(`/${name}/witness`), events: ["inbox.created"] }, other.apiKey)).status).toBe(201);
  await createInboxes(other.organizationId, 1);
  await eventually("the witness event delivered", () => to(`/${name}/witness`).length, (n) => n === 1);
}

describe("a webhook changed while deliveries are claimed ahead for it", () => {
  test("another URL: the deliveries not under way go to the new URL, none to the old one", async () => {
    const { apiKey, webhookId } = await backlog("moved");
    const patched = await server.api.patch(`/v1/webhooks/${webhookId}`, { url: url("/moved/new") }, apiKey);
    expect(patched.status).toBe(200);
    release();
    await eventually("every event delivered once", () => new Set([...to("/moved/old"), ...to("/moved/new")].map((a) => a.eventId)).size, (n) => n === 1 + events);
    expect(to("/moved/old")).toHaveLength(1 + perUrl);
    expect(to("/moved/new")).toHaveLength(events - perUrl);
  });

  test.each([
    ["disabled", (webhookId: string, apiKey: string) => server.api.patch(`/v1/webhooks/${webhookId}`, { enabled: false }, apiKey)],
    ["deleted", (webhookId: string, apiKey: string) => server.api.delete(`/v1/webhooks/${webhookId}`, apiKey)],
  ] as const)("%s: nothing more is sent once the change is answered", async (name, change) => {
    const { apiKey, webhookId } = await backlog(name);
    expect((await change(webhookId, apiKey)).status).toBe(200);
    release();
    await queueTurnedSince(name);
    expect(to(`/${name}/old`)).toHaveLength(1 + perUrl);
  });

  test("a deleted webhook's tries under way leave the deliveries queued after it alone, though SQLite gives their ids again", async () => {
    const { apiKey, webhookId } = await backlog("reused");
    expect((await server.api.delete(`/v1/webhooks/${webhookId}`, apiKey)).status).toBe(200);
    // Queued while the old tries are held: the new rows take the ids of the deleted ones.
    const other = await seedOrganization(server.app);
    const witness = await server.api.post("/v1/webhooks", { url: url("/reused/new"), events: ["inbox.created"] }, other.apiKey);
    await createInboxes(other.organizationId, 1 + perUrl);
    release();
    // The old tries' outcomes marked those new deliveries succeeded, never sent.
    await eventually("every new delivery sent", () => to("/reused/new").length, (n) => n === 1 + perUrl);
    // Their outcomes recorded (they share a commit, up to 50 ms after they come back).
    await server.app.queues.runDueNow("webhooks");
    const deliveries = await queryRows<{ status: string; attempts: number }>(server.app, `SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = '${witness.body.id}'`);
    expect(deliveries).toEqual(Array(1 + perUrl).fill({ status: "succeeded", attempts: 1 }));
  });

  test("a try in flight to the URL it left that answers 410 Gone does not disable it at its new one", async () => {
    const organization = await seedOrganization(server.app);
    const created = await server.api.post("/v1/webhooks", { url: url("/retired/old"), events: ["inbox.created"] }, organization.apiKey);
    held = new Promise((resolve) => (release = resolve));
    await createInboxes(organization.organizationId, 1);
    await eventually("the try at the old URL", () => to("/retired/old").length, (n) => n === 1);
    expect((await server.api.patch(`/v1/webhooks/${created.body.id}`, { url: url("/retired/new") }, organization.apiKey)).status).toBe(200);
    release();
    await server.app.queues.runDueNow("webhooks");
    expect((await server.api.get(`/v1/webhooks/${created.body.id}`, organization.apiKey)).body.enabled).toBe(true);
    await createInboxes(organization.organizationId, 1);
    await eventually("the next event at the new URL", () => to("/retired/new").length, (n) => n === 1);
  });

  test("another URL starts its failures' count anew: one failure at the new URL does not disable it for the old URL's five days", async () => {
    const organization = await seedOrganization(server.app);
    const created = await server.api.post("/v1/webhooks", { url: url("/failing/old"), events: ["inbox.created"] }, organization.apiKey);
    await createInboxes(organization.organizationId, 1);
    await eventually("a failure at the old URL", () => to("/failing/old").length, (n) => n === 1);
    await server.app.queues.runDueNow("webhooks");
    expect((await server.api.patch(`/v1/webhooks/${created.body.id}`, { url: url("/failing/new") }, organization.apiKey)).status).toBe(200);
    server.clock.advance(5 * 24 * 60 * 60_000 + 60_000);
    await createInboxes(organization.organizationId, 1);
    await server.app.queues.runDueNow("webhooks");
    expect(to("/failing/new").length).toBeGreaterThan(0);
    expect((await server.api.get(`/v1/webhooks/${created.body.id}`, organization.apiKey)).body).toMatchObject({ enabled: true });
  });
});
