// A full disk over SMTP: the sender is told the mail system is full and to try again (452 4.3.1,
// RFC 3463 X.3.1), and a run of refusals is logged once, not one line with a stack per message.
import { expect, test } from "bun:test";
import type { App } from "../../src/app";
import { createLogger } from "../../src/log";
import { replyFor } from "../../src/smtp/server";
import { scratch } from "../harness";
import { diskFullError } from "../store/disk-full-error";

const { dir: freshDir } = scratch();


test("a full disk: each message 452 4.3.1, one log line for the run; other storage failures 451 4.3.0", () => {
  const lines: { level: string; event: string }[] = [];
  const app = { log: createLogger("json", "debug", (line) => lines.push(JSON.parse(line))) } as unknown as App;
  const full = diskFullError(freshDir());
  const said = (reply: { responseCode: number; message: string }) => `${reply.responseCode} ${reply.message}`;
  for (let i = 0; i < 3; i++) expect(said(replyFor(app, new Error("wrapper", { cause: full }), "192.0.2.1"))).toStartWith("452 4.3.1 ");
  expect(lines.map(({ level, event }) => ({ level, event }))).toEqual([{ level: "error", event: "smtp: the database's disk is full; answered 452" }]);
  expect(said(replyFor(app, Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR_FSYNC" }), "192.0.2.1"))).toStartWith("451 4.3.0 ");
});
