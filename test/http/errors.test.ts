// How the API answers a failure it did not expect of the request (src/http/errors.ts): a full disk
// is a temporary condition, answered 503 with Retry-After and logged once a minute, not 500 with a
// stack per request.
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { toErrorReply } from "../../src/http/errors";
import { createLogger } from "../../src/log";
import { isStoreFull } from "../../src/store/unavailable";
import { scratch } from "../harness";

const { dir: freshDir } = scratch();

/** What SQLite throws when its file cannot grow: max_page_count stands in for a full disk. */
function diskFullError(): Error {
  const sqlite = new Database(join(freshDir(), "full.db"));
  try {
    sqlite.exec("CREATE TABLE t (b BLOB)");
    const pages = sqlite.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count;
    sqlite.exec(`PRAGMA max_page_count = ${pages}`);
    sqlite.query("INSERT INTO t VALUES (?)").run(Buffer.alloc(64 * 1024));
  } catch (error) {
    return error as Error;
  } finally {
    sqlite.close();
  }
  throw new Error("the insert did not fail");
}

test("a full disk is 503 with Retry-After (nothing was written: the same request may succeed later), logged once, not per request", () => {
  const error = diskFullError();
  expect(isStoreFull(error)).toBe(true);
  expect(isStoreFull(new Error("wrapper", { cause: error }))).toBe(true);
  const lines: { level: string; event: string }[] = [];
  const log = createLogger("json", "debug", (line) => lines.push(JSON.parse(line)));
  for (let i = 0; i < 3; i++) {
    expect(toErrorReply("UNKNOWN", error, log, "POST /v1/inboxes")).toEqual({ status: 503, error: "The server cannot store anything right now; try again later", headers: { "retry-after": "60" } });
  }
  expect(lines.map(({ level, event }) => ({ level, event }))).toEqual([{ level: "error", event: "request failed: the database's disk is full" }]);
  // Any other failure stays the server's own.
  expect(toErrorReply("UNKNOWN", new Error("boom"), log, "GET /v1/inboxes")).toMatchObject({ status: 500, error: "Internal server error" });
});
