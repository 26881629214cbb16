// Load and fairness with the default concurrency settings (64 overall, 4 per URL): a receiver
// that never answers holds at most its own 4 slots and never delays another receiver.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { emitEvent, webhookQueue } from "./helpers";

let server: TestServer;
let dead: WebhookReceiver;
let alive: WebhookReceiver;

beforeAll(async () => {
  dead = startWebhookReceiver();
  alive = startWebhookReceiver();
  server = await startTestServer({ env: { INBOXD_WEBHOOK_TIMEOUT_MS: "20000" } });
});
afterAll(async () => {
  await dead.close();
  await alive.close();
  await server.cleanup();
});

test("a receiver that never answers does not hold back another, and gets at most 4 requests at once", async () => {
  dead.respond("/hook", { delayMs: 60_000 });
  const org = seedOrganization(server.app);
  const subscribe = async (url: string, events: string[]) => (await server.api.post("/v1/webhooks", { url, events }, org.apiKey)).body;
  await subscribe(dead.url("/hook"), ["message.received", "message.sent"]);
  await subscribe(alive.url("/hook"), ["message.sent"]);

  // 30 events for the dead receiver only, due before the ones both receive.
  for (let i = 0; i < 30; i++) emitEvent(server.app, org.organizationId, "message.received", { n: i });
  server.clock.advance(1);
  for (let i = 0; i < 10; i++) emitEvent(server.app, org.organizationId, "message.sent", { n: i });
  void webhookQueue(server).runDueNow();

  await alive.waitFor(10, 3000);
  expect(dead.requests).toHaveLength(4);
  // Nothing more reaches the dead receiver while its 4 requests hang.
  await Bun.sleep(300);
  expect(dead.requests).toHaveLength(4);
  expect(alive.requests).toHaveLength(10);
});
