// An Idempotency-Key whose request a crashed run never finished is let go as the server starts.
import { expect, test } from "bun:test";
import { seedOrganization } from "../harness";
import { startMessageServer } from "../messages/helpers";

test("a key left running by a crashed run is let go at the next start, even when that run's clock was ahead (corrected by NTP since)", async () => {
  const first = await startMessageServer();
  const seeded = await seedOrganization(first.app);
  const ahead = first.clock.now() + 2 * 3_600_000;
  const running = { organizationId: seeded.organizationId, key: "left-running", fingerprint: "f", statusCode: null, responseBody: null, blobId: null, createdAt: ahead, expiresAt: ahead + 86_400_000, inboxId: null };
  expect(await first.app.store.transaction((tx) => tx.idempotencyKeys.begin(running, ahead))).toBeUndefined();
  await first.stop();

  const second = await startMessageServer({}, first.dataDir);
  try {
    const retried = await second.api.request("POST", "/v1/inboxes", { token: seeded.apiKey, headers: { "idempotency-key": "left-running" } });
    expect({ status: retried.status, replayed: retried.headers.get("idempotent-replayed") }).toEqual({ status: 201, replayed: null });
  } finally {
    await second.cleanup();
  }
});
