// The inbound queue's backlog as the metrics read it (store: acceptedInbound.backlog), on the
// engine the suite runs on: how many accepted messages wait for their analysis, and since when.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { InboundEnvelope } from "../../src/store/store";
import { startTestServer, type TestServer } from "../harness";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.cleanup();
});

const envelope = (n: number): InboundEnvelope => ({ transaction: `backlog${n}`, clientIp: "127.0.0.1", helo: "client.test", mailFrom: "sender@client.test", protocol: "ESMTP", receivedAt: 0, recipients: [] });

test("the backlog counts the accepted rows and dates the oldest, until its row is stored", async () => {
  const { store } = server.app;
  expect(await store.acceptedInbound.backlog()).toEqual({ depth: 0, oldestCreatedAt: null });
  // Accepted a day ahead of the clock: due then, so that the running inbound queue leaves them be.
  const acceptedAt = server.clock.now() + 86_400_000;
  const source = Buffer.alloc(4_000, "x");
  for (let n = 0; n < 3; n++) await store.transaction((tx) => tx.acceptedInbound.accept(envelope(n), "192.0.2.1", { bytes: source, blobId: null }, source.length, acceptedAt + n * 1_000));
  expect(await store.acceptedInbound.backlog()).toEqual({ depth: 3, oldestCreatedAt: acceptedAt });

  const [first] = await store.transaction(async (tx) => {
    const [due] = await tx.acceptedInbound.due(acceptedAt, { ids: [], peers: [] }, 1);
    return [await tx.acceptedInbound.claim(due!.id, acceptedAt + 60_000)];
  });
  await store.transaction((tx) => tx.acceptedInbound.finish(first!.id));
  expect(await store.acceptedInbound.backlog()).toEqual({ depth: 2, oldestCreatedAt: acceptedAt + 1_000 });
});
