// Event retention: with the clock moved past INBOXD_EVENT_RETENTION_DAYS, the background purge
// deletes old events (their finished webhook deliveries and attempts with them) but keeps those
// whose deliveries are pending; a stream resumed from a purged id gets a `reset` first.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { queryRow, queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { openStream } from "./sse-client";

const DAY_MS = 24 * 60 * 60 * 1000;
let server: TestServer;
let receiver: WebhookReceiver;
let owner: { organizationId: string; apiKey: string };

beforeAll(async () => {
  // A failed try is retried in 10 days: its delivery stays pending across the 8 days the clock moves.
  server = await startTestServer({ env: { INBOXD_EVENT_RETENTION_DAYS: "7", INBOXD_WEBHOOK_RETRY_DELAYS: "864000" } });
  receiver = startWebhookReceiver();
  receiver.respond("/failing", { status: 500 });
  owner = await seedOrganization(server.app);
});
afterAll(async () => {
  await receiver.close();
  await server.cleanup();
});

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const eventTypes = async () => (await queryRows<{ type: string }>(server.app, "SELECT type FROM events WHERE organization_id = ?1 ORDER BY id", owner.organizationId)).map((row) => row.type);
const deliveryStatuses = () => queryRows<{ status: string; attempts: number }>(server.app, "SELECT status, attempts FROM webhook_deliveries ORDER BY id");

test("old events go, except those with pending webhook deliveries; a resume from a purged id gets a reset, then what is kept", async () => {
  const post = (path: string, body: unknown) => server.api.post(path, body, owner.apiKey);
  expect((await post("/v1/webhooks", { url: receiver.url("/ok"), events: ["inbox.created"] })).status).toBe(201);
  expect((await post("/v1/webhooks", { url: receiver.url("/failing"), events: ["inbox.updated"] })).status).toBe(201);
  const inbox = (await post("/v1/inboxes", {})).body;
  await server.api.patch(`/v1/inboxes/${inbox.id}`, { name: "Pending" }, owner.apiKey);
  await server.api.delete(`/v1/inboxes/${(await post("/v1/inboxes", {})).body.id}`, owner.apiKey);
  expect(await eventTypes()).toEqual(["inbox.created", "inbox.updated", "inbox.created", "inbox.deleted"]);
  const firstId = (await queryRow<{ id: string }>(server.app, "SELECT id FROM events WHERE organization_id = ?1 ORDER BY id LIMIT 1", owner.organizationId))!.id;
  // Two deliveries succeed, the failing one waits for its retry.
  await until(async () => {
    const statuses = await deliveryStatuses();
    return JSON.stringify(statuses.map((d) => d.status).sort()) === JSON.stringify(["pending", "succeeded", "succeeded"]) && statuses.every((d) => d.attempts === 1);
  }, "the webhook outcomes");

  // An event 3 days younger than the others: still within the period when they pass it.
  server.clock.advance(3 * DAY_MS);
  const younger = (await post("/v1/inboxes", {})).body;
  await until(async () => {
    const statuses = await deliveryStatuses();
    return statuses.length === 4 && statuses.every((d) => d.attempts === 1);
  }, "the younger event's delivery");

  server.clock.advance(4 * DAY_MS + 60_000);
  await until(async () => (await eventTypes()).length === 2, "the purge");
  expect(await eventTypes()).toEqual(["inbox.updated", "inbox.created"]);
  // The older succeeded deliveries and their attempts went with their events.
  expect(await deliveryStatuses()).toEqual([
    { status: "pending", attempts: 1 },
    { status: "succeeded", attempts: 1 },
  ]);
  expect((await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM webhook_attempts"))!.n).toBe(2);

  const stream = await openStream(server.api.baseUrl, `/v1/events?since=${firstId}`, owner.apiKey);
  try {
    const events = await stream.waitForEvents(3);
    expect(events[0]!.event).toBe("reset");
    expect(events[0]!.id).toBeUndefined();
    expect(JSON.parse(events[0]!.data).reason).toMatch(/retention/);
    expect(events.slice(1).map((e) => [e.event, JSON.parse(e.data).data.id])).toEqual([
      ["inbox.updated", inbox.id],
      ["inbox.created", younger.id],
    ]);
  } finally {
    stream.close();
  }
}, 30_000);
