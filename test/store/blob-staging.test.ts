// Large values staged in chunks before their message's transaction (src/store/sqlite/blobs.ts): a
// write that fails midway is discarded; when the discard fails too (a full disk fails both), the
// next large value discards it, once writes work again, rather than the next start.
import { expect, test } from "bun:test";
import { blobStore } from "../../src/store/sqlite/blobs";
import { migrate } from "../../src/store/sqlite/migrate";
import { openDatabase } from "../../src/store/sqlite/open";
import { scratch } from "../harness";

const { dir: freshDir } = scratch();

test("a value whose write and discard both failed is discarded with the next large value", async () => {
  const { sqlite, close } = openDatabase(freshDir());
  migrate(sqlite, Date.now());
  let writes = 0;
  let failAfter = Infinity;
  // The connection refuses writes from the third of this value's on, as a full disk would.
  const blobs = blobStore(sqlite, async (write) => {
    if (++writes > failAfter) sqlite.exec("PRAGMA query_only = 1");
    return write();
  });
  const staged = () => sqlite.query<{ n: number }, []>("SELECT (SELECT count(*) FROM staged_blobs) + (SELECT count(*) FROM blob_chunks) AS n").get()!.n;
  const large = [new Uint8Array(1024 * 1024)];
  failAfter = 2;
  await expect(blobs.prepare(large, Date.now())).rejects.toThrow("readonly");
  expect(staged()).toBeGreaterThan(0);
  sqlite.exec("PRAGMA query_only = 0");
  failAfter = Infinity;
  const kept = await blobs.prepare(large, Date.now());
  expect(sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM staged_blobs").get()!.n).toBe(1);
  blobs.release([kept.blobId!]);
  expect(staged()).toBe(0);
  close();
});
