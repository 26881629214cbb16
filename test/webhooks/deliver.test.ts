// One delivery try at a time, without the queue: the checked addresses of a host serve the tries
// of the next few seconds (one look-up per burst), the connection always goes to an address that
// was checked, and refusals and failed look-ups are asked again at the next try.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createDeliverer, hostCheckReuseMs, type DeliveryOptions } from "../../src/webhooks/deliver";
import { newWebhookSecret } from "../../src/webhooks/signature";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";

let receiver: WebhookReceiver;
beforeAll(() => {
  receiver = startWebhookReceiver();
});
afterAll(() => receiver.close());

/** A deliverer whose DNS answers come from `answers` (counted) and whose clock the test moves. */
function deliverer(answers: () => string[], allowPrivate = true) {
  const clock = { now: 1_700_000_000_000 };
  const lookups: string[] = [];
  const options: DeliveryOptions = {
    lookup: async (host) => {
      lookups.push(host);
      return answers();
    },
    allowPrivate,
    timeoutMs: 2000,
    now: () => clock.now,
  };
  const deliver = createDeliverer(options);
  const secret = newWebhookSecret();
  // Names under .invalid never resolve (RFC 6761): only the deliverer's own look-up can find them.
  const send = (host: string, path = "/hook", scheme = "http") => deliver({ url: `${scheme}://${host}:${receiver.port}${path}`, secret, eventId: "evt_1", body: "{}" });
  return { send, lookups, advance: (ms: number) => (clock.now += ms) };
}

describe("host checks", () => {
  test("a burst of tries to one host shares one look-up, each to the address that was checked", async () => {
    const { send, lookups } = deliverer(() => ["127.0.0.1"]);
    const before = receiver.requests.length;
    const results = await Promise.all(Array.from({ length: 10 }, () => send("burst.invalid", "/burst")));
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    expect(lookups).toEqual(["burst.invalid"]);
    const received = receiver.requests.slice(before);
    expect(received).toHaveLength(10);
    expect(received.every((r) => r.headers.host === `burst.invalid:${receiver.port}`)).toBe(true);
  });

  test("a changed answer is followed once the reuse time is over, never before", async () => {
    let answer = "127.0.0.1";
    const { send, lookups, advance } = deliverer(() => [answer]);
    expect((await send("moving.invalid")).statusCode).toBe(200);
    // The host moves to an address where nothing listens.
    answer = "127.0.0.2";
    advance(hostCheckReuseMs - 1);
    expect((await send("moving.invalid")).statusCode).toBe(200);
    advance(1);
    const moved = await send("moving.invalid");
    expect(moved.statusCode).toBeNull();
    expect(moved.error).toContain("ECONNREFUSED");
    expect(lookups).toHaveLength(2);
  });

  test("a failed look-up is asked again at the next try", async () => {
    let failing = true;
    const { send, lookups } = deliverer(() => {
      if (failing) throw new Error("SERVFAIL");
      return ["127.0.0.1"];
    });
    expect((await send("flaky.invalid")).error).toBe("refused: could not resolve flaky.invalid: SERVFAIL");
    failing = false;
    expect((await send("flaky.invalid")).statusCode).toBe(200);
    expect(lookups).toHaveLength(2);
  });

  test("with the guard on, a host that resolves to a private address is refused at every try, each after a fresh look-up", async () => {
    const { send, lookups } = deliverer(() => ["10.0.0.7"], false);
    for (let i = 0; i < 3; i++) {
      expect((await send("private.invalid", "/hook", "https")).error).toStartWith("refused: private.invalid resolves to a private");
    }
    expect(lookups).toHaveLength(3);
  });
});

describe("failures", () => {
  test("a receiver that answers no HTTP: the error names the URL's origin, never its path or query, which may hold the receiver's token", async () => {
    const garbage = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket) {
          socket.write("NOT HTTP AT ALL\r\n\r\n");
          socket.end();
        },
      },
    });
    try {
      const deliver = createDeliverer({ lookup: async () => ["127.0.0.1"], allowPrivate: true, timeoutMs: 2000, now: () => Date.now() });
      const result = await deliver({ url: `http://127.0.0.1:${garbage.port}/hook?token=RECEIVER-TOKEN-1`, secret: newWebhookSecret(), eventId: "evt_1", body: "{}" });
      expect(result.statusCode).toBeNull();
      expect(result.error).toContain(`http://127.0.0.1:${garbage.port}`);
      expect(result.error).not.toContain("RECEIVER-TOKEN-1");
      expect(result.error).not.toContain("/hook");
    } finally {
      garbage.stop(true);
    }
  });
});
