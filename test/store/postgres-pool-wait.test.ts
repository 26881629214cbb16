// The answer deadline of a PostgreSQL transaction (src/store/postgres/unavailable.ts) runs from its
// connection on: a transaction that waited for the pool behind others is not failed for their time.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { POOL_SIZE } from "../../src/store/postgres/connection";
import { ANSWER_DEADLINE_SECONDS } from "../../src/store/postgres/unavailable";
import { onPostgres, startTestServer, type TestServer } from "../harness";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.cleanup());

test.skipIf(!onPostgres)("one transaction more than the pool has connections, each holding its own for 60 % of the deadline: all commit", async () => {
  const holdMs = ANSWER_DEADLINE_SECONDS * 600;
  const outcomes = await Promise.all(
    Array.from({ length: POOL_SIZE + 1 }, () =>
      server.app.store
        .transaction(async (tx) => {
          await tx.inboxes.count("org_pool");
          await Bun.sleep(holdMs);
          return "committed";
        })
        .catch((error: Error) => error.message),
    ),
  );
  expect(new Set(outcomes)).toEqual(new Set(["committed"]));
}, 60_000);
