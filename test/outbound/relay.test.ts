import { afterAll, beforeAll, expect, test } from "bun:test";
import { startOutboundWorld, type OutboundWorld } from "./world";

// INBOXD_SMTP_RELAY: everything goes through one smarthost that demands AUTH, over STARTTLS.
const credentials = { user: "relay-user", pass: "s3cret:@/" };
const relayUrl = (port: number, pass = credentials.pass) => `smtp://${credentials.user}:${encodeURIComponent(pass)}@127.0.0.1:${port}`;

let w: OutboundWorld;
beforeAll(async () => {
  w = await startOutboundWorld({ sink: { auth: credentials }, env: (sink) => ({ INBOXD_SMTP_RELAY: relayUrl(sink.port) }) });
});
afterAll(() => w.close());

test("mail to any domain goes to the relay, authenticated after STARTTLS, without an MX look-up", async () => {
  const sent = await w.send({ to: ["pat@unrouted.test"], cc: ["lou@elsewhere.test"] });
  await w.queue.runDueNow();
  const message = await w.message(sent.id);
  expect(message.status).toBe("delivered");
  const relayed = w.sink.messages.map((m) => ({ rcptTo: m.rcptTo, authUser: m.authUser, secure: m.secure }));
  expect(relayed.toSorted((a, b) => a.rcptTo[0]!.localeCompare(b.rcptTo[0]!))).toEqual([
    { rcptTo: ["lou@elsewhere.test"], authUser: "relay-user", secure: true },
    { rcptTo: ["pat@unrouted.test"], authUser: "relay-user", secure: true },
  ]);
  expect(w.dns.queries.filter((q) => q.type === "MX")).toEqual([]);
});

test("a refused login defers the message; it is not bounced", async () => {
  const wrong = await startOutboundWorld({ sink: { auth: credentials }, env: (sink) => ({ INBOXD_SMTP_RELAY: relayUrl(sink.port, "wrong") }) });
  try {
    const sent = await wrong.send({ to: ["pat@unrouted.test"] });
    await wrong.queue.runDueNow();
    const message = await wrong.message(sent.id);
    expect(message.status).toBe("sent");
    expect(message.deliveries[0]).toMatchObject({ status: "queued", attempts: 1, lastResponse: expect.stringContaining("535") });
    expect(wrong.sink.messages).toEqual([]);
  } finally {
    await wrong.close();
  }
});
