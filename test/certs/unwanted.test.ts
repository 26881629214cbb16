// The certificates no node serves any more: a custom domain deleted or no longer receiving (its
// mta-sts name), a host name changed. Served until they expire, then removed, so that HTTPS stops
// presenting an expired certificate and `inboxd doctor` stops failing on a name nobody wants.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.cleanup());

test("an unwanted name's certificate goes once it has expired, an unwanted mta-sts name never issued at once; wanted names and other nodes' pending ones stay", async () => {
  const { certificates } = server.app.store;
  const now = server.clock.now();
  const hour = 3_600_000;
  const issued = (notAfter: number) => ({ certificatePem: "-----BEGIN CERTIFICATE-----", privateKeyPem: "key", notBefore: now - 90 * 24 * hour, notAfter, nextAttemptAt: notAfter - hour });
  const names = ["mx.inboxd.test", "mta-sts.inboxd.test", "mta-sts.gone.example", "mta-sts.expired.example", "mta-sts.pending.example", "mx2.inboxd.test", "old-api.inboxd.test"];
  await certificates.want(names, now);
  for (const name of ["mx.inboxd.test", "mta-sts.inboxd.test", "mta-sts.gone.example", "mx2.inboxd.test"]) await certificates.recordIssued(name, issued(now + 30 * 24 * hour), now);
  for (const name of ["mta-sts.expired.example", "old-api.inboxd.test"]) await certificates.recordIssued(name, issued(now - 1), now);
  const wanted = ["mx.inboxd.test", "mta-sts.inboxd.test"];
  expect((await certificates.forgetUnwanted(wanted, now)).sort()).toEqual(["mta-sts.expired.example", "mta-sts.pending.example", "old-api.inboxd.test"]);
  // Still valid: served until it expires (a domain verified again meanwhile keeps it); another node's host, renewed by that node, stays.
  expect((await certificates.list()).map((row) => row.name).sort()).toEqual(["mta-sts.gone.example", "mta-sts.inboxd.test", "mx.inboxd.test", "mx2.inboxd.test"]);
  expect((await certificates.forgetUnwanted(wanted, now + 31 * 24 * hour)).sort()).toEqual(["mta-sts.gone.example", "mx2.inboxd.test"]);
  expect((await certificates.list()).map((row) => row.name).sort()).toEqual(["mta-sts.inboxd.test", "mx.inboxd.test"]);
});
