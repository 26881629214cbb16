import { afterAll, beforeAll, expect, test } from "bun:test";
import { startOutboundWorld, type OutboundWorld } from "./world";

// INBOXD_OUTBOUND_ALLOW_PRIVATE=0, the default: the MX hosts of a domain a tenant sends to must be
// on public addresses, so that a send cannot probe the appliance's own network. Every address used
// here is loopback: a test that fails still sends nothing off this machine.
let w: OutboundWorld;
beforeAll(async () => {
  w = await startOutboundWorld({ env: { INBOXD_OUTBOUND_ALLOW_PRIVATE: "0" } });
});
afterAll(() => w.close());

async function sendAndRun(to: string) {
  const sent = await w.send({ to: [to] });
  await w.queue.runDueNow();
  return w.message(sent.id);
}

test("an MX on 127.0.0.1 is refused: the recipient is rejected with the reason, and no connection is made", async () => {
  w.mx("loopback.test");
  const message = await sendAndRun("ann@loopback.test");
  expect(message.status).toBe("rejected");
  expect(message.deliveries[0]).toMatchObject({
    status: "rejected",
    attempts: 0,
    lastResponse: "rejected: no mail server of this domain may be connected to: mx.loopback.test resolves to a private, loopback, link-local or reserved address (127.0.0.1)",
  });
  expect(await w.events(message.id)).toContain("message.rejected");
  expect(w.sink.connections).toBe(0);
});

test("every MX host and every address is checked: IPv6 loopback, IPv4-mapped loopback, and the implicit MX's own A", async () => {
  w.mx("several.test", [
    { name: "mx1.several.test", priority: 10, address: "127.0.0.2" },
    { name: "mx2.several.test", priority: 20, address: "127.0.0.3" },
  ]);
  w.dns.set("mx2.several.test", "AAAA", ["::1", "::ffff:127.0.0.1"]);
  w.dns.set("implicit.test", "A", ["127.0.0.1"]);
  const several = await sendAndRun("bo@several.test");
  expect(several.deliveries[0].status).toBe("rejected");
  expect(several.deliveries[0].lastResponse).toContain("mx1.several.test resolves to a private, loopback, link-local or reserved address (127.0.0.2)");
  expect(several.deliveries[0].lastResponse).toContain("mx2.several.test resolves to a private, loopback, link-local or reserved address (127.0.0.3, ::1, ::ffff:7f00:1)");
  const implicit = await sendAndRun("cy@implicit.test");
  expect(implicit.deliveries[0]).toMatchObject({ status: "rejected", lastResponse: expect.stringContaining("implicit.test resolves to a private, loopback, link-local or reserved address (127.0.0.1)") });
  expect(w.sink.connections).toBe(0);
});

test("a refused host beside one whose look-up failed for now: deferred, since the other may answer with a public address later", async () => {
  w.mx("flaky.test", [
    { name: "mx1.flaky.test", priority: 10, address: "127.0.0.1" },
    { name: "mx2.flaky.test", priority: 20, address: "127.0.0.1" },
  ]);
  w.dns.failNext("mx2.flaky.test", "SERVFAIL", 100);
  const message = await sendAndRun("di@flaky.test");
  expect(message.status).toBe("sent");
  expect(message.deliveries[0]).toMatchObject({ status: "queued", attempts: 1 });
  expect(message.deliveries[0].lastResponse).toContain("mx1.flaky.test resolves to a private, loopback, link-local or reserved address");
  expect(w.sink.connections).toBe(0);
});

test("the relay is the operator's choice: it is used on loopback all the same", async () => {
  const relayed = await startOutboundWorld({ env: (sink) => ({ INBOXD_OUTBOUND_ALLOW_PRIVATE: "0", INBOXD_SMTP_RELAY: `smtp://127.0.0.1:${sink.port}` }) });
  try {
    const sent = await relayed.send({ to: ["ed@anywhere.test"] });
    await relayed.queue.runDueNow();
    expect((await relayed.message(sent.id)).status).toBe("delivered");
    expect(relayed.sink.messages.map((m) => m.rcptTo)).toEqual([["ed@anywhere.test"]]);
  } finally {
    await relayed.close();
  }
});
