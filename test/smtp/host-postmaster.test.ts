// postmaster at INBOXD_HOSTNAME is the operator's (RFC 5321 §4.5.1), unless the host name is a
// custom domain an organization hosts here: then its own postmaster@ inbox takes the mail.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { insertInbox } from "../../src/inboxes/service";
import { publishRecords } from "../domains/zone";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { sendMail } from "./mail-client";

let dns: DnsServer;
let server: TestServer;
beforeAll(async () => {
  dns = await startDnsServer();
  dns.set("mail.acme.test", "A", ["192.0.2.10"]);
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_HOSTNAME: "mail.acme.test", INBOXD_PUBLIC_IPS: "192.0.2.10", INBOXD_POSTMASTER_INBOX: "desk@inboxd.test" } });
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
});

const subjects = async (inboxId: string, apiKey: string) => ((await server.api.get(`/v1/inboxes/${inboxId}/messages`, apiKey)).body as { subject: string }[]).map((m) => m.subject);
const deliver = (subject: string) =>
  sendMail(server.smtpPort, { from: "alice@sender.test", to: ["PostMaster@Mail.Acme.Test"], raw: `From: alice@sender.test\r\nSubject: ${subject}\r\nMessage-ID: <${crypto.randomUUID()}@sender.test>\r\n\r\nHello.\r\n` });

test("the host name's postmaster reaches the operator; once the host name is an organization's verified domain, that organization's postmaster@ inbox", async () => {
  const operator = await seedOrganization(server.app, "Operator");
  const desk = await server.app.store.transaction((tx) => insertInbox(server.app, tx, operator.organizationId, { email: "desk@inboxd.test" }));
  expect((await deliver("for the operator")).response).toStartWith("250");
  expect(await subjects(desk.id, operator.apiKey)).toContain("for the operator");

  const acme = await seedOrganization(server.app, "Acme");
  const created = await server.api.post("/v1/domains", { name: "mail.acme.test" }, acme.apiKey);
  publishRecords(dns, created.body.records);
  expect((await server.api.post("/v1/domains/mail.acme.test/verify", undefined, acme.apiKey)).body.receiving).toBe(true);
  const own = await server.api.post("/v1/inboxes", { email: "postmaster@mail.acme.test" }, acme.apiKey);
  expect(own.status).toBe(201);
  expect((await deliver("for acme")).response).toStartWith("250");
  expect(await subjects(own.body.id, acme.apiKey)).toContain("for acme");
  expect(await subjects(desk.id, operator.apiKey)).not.toContain("for acme");
});
