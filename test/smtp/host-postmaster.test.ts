// postmaster at INBOXD_HOSTNAME is the operator's (RFC 5321 §4.5.1), and no organization can take
// the host name as a custom domain to have it (an operator routes it with INBOXD_POSTMASTER_INBOX).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { insertInbox } from "../../src/inboxes/service";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { sendMail } from "./mail-client";
import { openSession } from "./raw-client";

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

test("the host name's postmaster reaches the operator, in any case; an organization cannot make the host name its domain to take it", async () => {
  const operator = await seedOrganization(server.app, "Operator");
  const desk = await server.app.store.transaction((tx) => insertInbox(server.app, tx, operator.organizationId, { email: "desk@inboxd.test" }));
  expect((await deliver("for the operator")).response).toStartWith("250");
  expect(await subjects(desk.id, operator.apiKey)).toContain("for the operator");

  const acme = await seedOrganization(server.app, "Acme");
  const claimed = await server.api.post("/v1/domains", { name: "mail.acme.test" }, acme.apiKey);
  expect(claimed.status).toBe(422);
  expect(claimed.body.error).toContain("this server's host name (INBOXD_HOSTNAME)");
  expect((await deliver("still the operator's")).response).toStartWith("250");
  expect(await subjects(desk.id, operator.apiKey)).toContain("still the operator's");
});

test("quoted, the server's own addresses at its host name are the same mailboxes: postmaster and tlsrpt are taken, not refused as relaying", async () => {
  const session = await openSession(server.smtpPort);
  try {
    expect((await session.command("EHLO client.example")).code).toBe(250);
    expect((await session.command("MAIL FROM:<alice@sender.test>")).code).toBe(250);
    for (const address of ['"PostMaster"@Mail.Acme.Test', '"tlsrpt"@mail.acme.test']) expect((await session.command(`RCPT TO:<${address}>`)).code).toBe(250);
  } finally {
    session.end();
  }
});
