// How the API answers a failure it did not expect of the request (src/http/errors.ts): a full disk
// is a temporary condition, answered 503 with Retry-After and logged once a minute, not 500 with a
// stack per request.
import { expect, test } from "bun:test";
import { toErrorReply } from "../../src/http/errors";
import { createLogger } from "../../src/log";
import { isStoreFull, StoreUnavailableError } from "../../src/store/unavailable";
import { scratch } from "../harness";
import { diskFullError } from "../store/disk-full-error";

const { dir: freshDir } = scratch();


test("a full disk is 503 with Retry-After (nothing was written: the same request may succeed later), logged once, not per request", () => {
  const error = diskFullError(freshDir());
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

test("the database out of reach: 503, logged once for a run of refusals, with the driver's reason and none of the failed statement's values", () => {
  const driverError = Object.assign(new Error("Connection closed"), { code: "ERR_POSTGRES_CONNECTION_CLOSED" });
  const failedQuery = new Error('Failed query: select "id" from "api_keys" where "key_hash" = $1\nparams: 57a6c7e3feb80b916f6d2a49413e68e2', { cause: driverError });
  const error = new StoreUnavailableError(failedQuery);
  const lines: { level: string; event: string; error: string }[] = [];
  const log = createLogger("json", "debug", (line) => lines.push(JSON.parse(line)));
  for (let i = 0; i < 3; i++) expect(toErrorReply("UNKNOWN", error, log, "GET /v1/inboxes")).toMatchObject({ status: 503, headers: { "retry-after": "5" } });
  expect(lines).toEqual([expect.objectContaining({ level: "warn", event: "request failed: the database is unreachable", error: "the database is unreachable: Connection closed (ERR_POSTGRES_CONNECTION_CLOSED)" })]);
});

test("storage that fails a statement otherwise (an I/O error, out of descriptors) is 503 with Retry-After too, not 500", () => {
  const log = createLogger("json", "silent");
  for (const error of [Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR_WRITE" }), Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" }), Object.assign(new Error("attempt to write a readonly database"), { code: "SQLITE_READONLY" })]) {
    expect(toErrorReply("UNKNOWN", new Error("wrapper", { cause: error }), log, "POST /v1/inboxes")).toEqual({ status: 503, error: "The server cannot store anything right now; try again later", headers: { "retry-after": "60" } });
  }
});
