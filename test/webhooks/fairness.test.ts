// Load and fairness with the default concurrency settings (64 overall, 4 per URL): a receiver
// that never answers holds at most its own 4 slots and never delays another receiver, and one that
// stops answering gives back the tries claimed ahead for it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { emitEvent, emitEvents, webhookQueue } from "./helpers";

let server: TestServer;
let dead: WebhookReceiver;
let alive: WebhookReceiver;
let stalling: WebhookReceiver;

beforeAll(async () => {
  dead = startWebhookReceiver();
  alive = startWebhookReceiver();
  stalling = startWebhookReceiver();
  server = await startTestServer({ env: { INBOXD_WEBHOOK_TIMEOUT_MS: "20000" } });
});
afterAll(async () => {
  await dead.close();
  await alive.close();
  await stalling.close();
  await server.cleanup();
});

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 8000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

// First in the file: the dead receiver's requests below never end, so runDueNow would not return after them.
test("a receiver that stops answering gives back the tries claimed ahead for it; they go out later, in order", async () => {
  const org = await seedOrganization(server.app);
  const created = await server.api.post("/v1/webhooks", { url: stalling.url("/hook"), events: ["message.received"] }, org.apiKey);
  const attempts = async () => ((await server.api.get(`/v1/webhooks/${created.body.id}/attempts?per=100`, org.apiKey)).body as any[]).reverse();
  const queue = webhookQueue(server);
  // A prompt answer first: the URL's claims may then run ahead of its 4 sending slots.
  await emitEvent(server.app, org.organizationId, "message.received", { n: 0 });
  await queue.runDueNow();

  // More events than a prompt URL's claim limit (4 slots, 16 rounds: 64): 16 stay unclaimed.
  stalling.respond("/hook", { delayMs: 2500 });
  await emitEvents(server.app, org.organizationId, Array.from({ length: 80 }, (_, i) => ({ type: "message.received", payload: { n: i + 1 } })));
  const done = queue.runDueNow();
  await stalling.waitFor(5);
  expect(await attempts()).toHaveLength(65);
  // Tries in flight for a second make the URL slow: the next turn gives back the 60 claims behind
  // them, due again as they were before, so still before the 16 never claimed.
  server.clock.advance(1000);
  await until("the claims to be given back", async () => (await attempts()).length === 5);
  expect(stalling.requests).toHaveLength(5);

  stalling.respond("/hook", {});
  await done;
  const all = await attempts();
  expect(all.map((a) => a.success)).toEqual(Array(81).fill(true));
  expect(all.map((a) => a.payload.data.n)).toEqual(Array.from({ length: 81 }, (_, n) => n));
  expect(stalling.requests).toHaveLength(81);
});

test("a receiver that never answers does not hold back another, and gets at most 4 requests at once", async () => {
  dead.respond("/hook", { delayMs: 60_000 });
  const org = await seedOrganization(server.app);
  const subscribe = async (url: string, events: string[]) => (await server.api.post("/v1/webhooks", { url, events }, org.apiKey)).body;
  await subscribe(dead.url("/hook"), ["message.received", "message.sent"]);
  await subscribe(alive.url("/hook"), ["message.sent"]);

  // 30 events for the dead receiver only, due before the ones both receive.
  await server.app.store.transaction(async (tx) => {
    for (let i = 0; i < 30; i++) await tx.events.emit({ organizationId: org.organizationId, type: "message.received", payload: { n: i } }, server.clock.now());
    server.clock.advance(1);
    for (let i = 0; i < 10; i++) await tx.events.emit({ organizationId: org.organizationId, type: "message.sent", payload: { n: i } }, server.clock.now());
  });
  void webhookQueue(server).runDueNow();

  await alive.waitFor(10, 3000);
  expect(dead.requests).toHaveLength(4);
  // Nothing more reaches the dead receiver while its 4 requests hang.
  await Bun.sleep(300);
  expect(dead.requests).toHaveLength(4);
  expect(alive.requests).toHaveLength(10);
});

/**
 * A server of its own with `concurrency` sending slots, an attacking organization with `urls`
 * webhooks to URLs that never answer and `events` events for them, then a victim's event with a
 * webhook to a prompt receiver: the victim's delivery must arrive at once, while the attacker's
 * receivers have had `attackerRequests` requests.
 */
async function expectVictimServedBeside(concurrency: string, urls: number, events: number, attackerRequests: number) {
  const small = await startTestServer({ env: { INBOXD_WEBHOOK_TIMEOUT_MS: "20000", INBOXD_WEBHOOK_CONCURRENCY: concurrency } });
  const blackHole = startWebhookReceiver();
  const prompt = startWebhookReceiver();
  try {
    const attacker = await seedOrganization(small.app, "Black holes");
    const victim = await seedOrganization(small.app, "Prompt");
    for (let i = 0; i < urls; i++) {
      blackHole.respond(`/hook${i}`, { delayMs: 60_000 });
      expect((await small.api.post("/v1/webhooks", { url: blackHole.url(`/hook${i}`), events: ["message.received"] }, attacker.apiKey)).status).toBe(201);
    }
    expect((await small.api.post("/v1/webhooks", { url: prompt.url("/hook"), events: ["message.received"] }, victim.apiKey)).status).toBe(201);
    await emitEvents(small.app, attacker.organizationId, Array.from({ length: events }, (_, n) => ({ type: "message.received", payload: { n } })));
    small.clock.advance(1);
    await emitEvent(small.app, victim.organizationId, "message.received", { n: "victim" });
    void webhookQueue(small).runDueNow();
    await prompt.waitFor(1, 3000);
    expect(blackHole.requests).toHaveLength(attackerRequests);
  } finally {
    await blackHole.close();
    await prompt.close();
    await small.cleanup();
  }
}

test("an organization whose receivers never answer sends on at most half the slots: another's webhook is not held back", async () => {
  // Four URLs that never answer, each within its own per-URL limit: together they could take every slot.
  await expectVictimServedBeside("4", 4, 1, 2);
});

test("an organization holds at most half the claims: another's delivery, due after its backlog, is claimed and sent at once", async () => {
  // 2 sending slots: 32 claims, 16 for one organization; each URL that has not answered yet gets 4.
  // Ten URLs that never answer, four events each: forty claims wanted, more than all there are.
  await expectVictimServedBeside("2", 10, 4, 1);
});
