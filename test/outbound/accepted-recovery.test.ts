import { afterAll, beforeAll, expect, test } from "bun:test";
import { startOutboundWorld, type OutboundWorld } from "./world";

// The queue commits a remote's 250 on its own the moment it comes back, and the rest of the try
// (the message's status, its event) a little later. A crash in between leaves the delivery
// accepted and due: the queue records it at once, and never sends it again.
let w: OutboundWorld;
beforeAll(async () => {
  w = await startOutboundWorld();
  w.mx("remote.test");
});
afterAll(() => w.close());

test("an acceptance committed without the rest of its try: recorded at once, not sent again", async () => {
  w.answers.set("ann@remote.test", { code: 451, message: "4.3.0 Try again later" });
  const sent = await w.send({ to: ["ann@remote.test"] });
  await w.queue.runDueNow();
  const deferred = await w.message(sent.id);
  expect(deferred.deliveries[0]).toMatchObject({ status: "queued", attempts: 1 });
  w.answers.delete("ann@remote.test");

  // The state a crash leaves right after the 250 of the retry was committed.
  const [delivery] = await w.server.app.store.messages.deliveriesOf([sent.id]);
  await w.server.app.store.deliveries.markAccepted(delivery!.id, "250 2.0.0 Ok: queued as ABC", w.server.clock.now());
  const between = await w.message(sent.id);
  expect(between.status).toBe("sent");
  expect(between.deliveries[0].status).toBe("delivered");

  // At once, not at the retry time the try was claimed with.
  await w.queue.runDueNow();
  const recorded = await w.message(sent.id);
  expect(recorded.status).toBe("delivered");
  expect(recorded.deliveries[0]).toEqual({ recipient: "ann@remote.test", status: "delivered", attempts: 1, lastResponse: "250 2.0.0 Ok: queued as ABC", updatedAt: expect.any(String) });
  expect(await w.events(sent.id)).toContain("message.delivered");
  expect(w.sink.messages).toEqual([]);

  w.server.clock.advance(10 * 60_000);
  await w.queue.runDueNow();
  expect(w.sink.messages).toEqual([]);
});
