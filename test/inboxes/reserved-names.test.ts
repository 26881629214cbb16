// The operator's addresses, over real HTTP and SMTP sockets: role names (RFC 2142, CA/Browser
// Forum BR §3.2.2.4.4) and subaddresses cannot be created on the shared service domain, a custom
// domain's own organization may use any role name, and postmaster is accepted as RFC 5321 §4.5.1
// requires, delivered to INBOXD_POSTMASTER_INBOX or refused with a reply that says why.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { claimRecord } from "../../src/domains/ownership";
import { insertInbox } from "../../src/inboxes/service";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { publishRecords } from "../domains/zone";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { openSession, startTransaction, type Reply } from "../smtp/raw-client";

const DEFAULT_RESERVED = ["postmaster", "abuse", "noc", "security", "hostmaster", "webmaster", "www", "admin", "administrator", "root", "mailer-daemon", "noreply", "no-reply", "dmarc"];
const OPERATOR_INBOX = "operator-desk@inboxd.test";

let dns: DnsServer;
let server: TestServer;
let unconfigured: TestServer;
let operator: { organizationId: string; apiKey: string };
let org: { organizationId: string; apiKey: string };
let other: { organizationId: string; apiKey: string };

beforeAll(async () => {
  dns = await startDnsServer();
  dns.set("mx.inboxd.test", "A", ["192.0.2.10"]);
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_POSTMASTER_INBOX: OPERATOR_INBOX } });
  // An operator's list of its own adds to the names that must stay the operator's.
  unconfigured = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_RESERVED_LOCAL_PARTS: "billing" } });
  operator = await seedOrganization(server.app, "Operator");
  org = await seedOrganization(server.app, "Acme");
  other = await seedOrganization(server.app, "Other");
});
afterAll(async () => {
  await server.cleanup();
  await unconfigured.cleanup();
  await dns.close();
});

const create = (email: string, key = org.apiKey) => server.api.post("/v1/inboxes", { email }, key);

/** A domain of `owner` with its records published and verified, so that it receives mail. */
async function verifiedDomain(name: string, owner = org) {
  const created = await server.api.post("/v1/domains", { name }, owner.apiKey);
  expect(created.status).toBe(201);
  publishRecords(dns, created.body.records);
  const verified = await server.api.post(`/v1/domains/${name}/verify`, undefined, owner.apiKey);
  expect(verified.body.receiving).toBe(true);
}

/** One message over a raw SMTP session; resolves with the reply to its data (or to the first refused RCPT). */
async function deliver(target: TestServer, to: string[], subject: string): Promise<Reply> {
  const session = await openSession(target.smtpPort);
  try {
    await startTransaction(session, "alice@sender.test", []);
    for (const recipient of to) {
      const reply = await session.command(`RCPT TO:<${recipient}>`);
      if (reply.code !== 250) return reply;
    }
    expect((await session.command("DATA")).code).toBe(354);
    return await session.command(`From: alice@sender.test\r\nTo: postmaster@inboxd.test\r\nSubject: ${subject}\r\nMessage-ID: <${crypto.randomUUID()}@sender.test>\r\n\r\nHello.\r\n.`);
  } finally {
    session.end();
  }
}

async function rcpt(target: TestServer, address: string): Promise<Reply> {
  const session = await openSession(target.smtpPort);
  try {
    await startTransaction(session, "alice@sender.test", []);
    return await session.command(`RCPT TO:<${address}>`);
  } finally {
    session.end();
  }
}

async function subjects(inboxId: string, key: string): Promise<string[]> {
  const list = await server.api.get(`/v1/inboxes/${inboxId}/messages?per=100`, key);
  expect(list.status).toBe(200);
  return list.body.map((message: { subject: string }) => message.subject);
}

describe("creating an inbox on the service domain", () => {
  test("the configured reserved names are the RFC 2142 operations roles and the CA validation names", () => {
    expect(server.app.config.reservedLocalParts).toEqual(DEFAULT_RESERVED);
  });

  test.each(DEFAULT_RESERVED)("%s@ is 422 naming email", async (local) => {
    const res = await create(`${local}@inboxd.test`);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith("email:");
    expect(res.body.error).toContain("reserved for the operator");
  });

  test.each(["PostMaster@inboxd.test", "ADMIN@InboxD.Test", "Mailer-Daemon@inboxd.test", "No-Reply@INBOXD.TEST"])("a case variant (%s) is 422 too", async (email) => {
    const res = await create(email);
    expect(res.status).toBe(422);
    expect(res.body.error).toContain("reserved for the operator");
  });

  test('a quoting variant ("abuse"@inboxd.test) is 422 too, as every quoted local part', async () => {
    expect(await create('"abuse"@inboxd.test')).toMatchObject({ status: 422, body: { error: "email: must be an email address such as support@example.com" } });
  });

  test.each(["a+b@inboxd.test", "support+x@inboxd.test", "+lead@inboxd.test"])("a subaddress (%s) is 422", async (email) => {
    const res = await create(email);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith('email: "+" may not appear');
  });

  test.each(["support", "info", "sales", "postmaster-team", "admin.jones"])("a name that is not reserved (%s) is still fine", async (local) => {
    const res = await create(`${local}@inboxd.test`);
    expect(res.status).toBe(201);
    expect(res.body.email).toBe(`${local}@inboxd.test`);
  });

  test("an INBOXD_RESERVED_LOCAL_PARTS of the operator's own keeps postmaster, abuse and the certificate authorities' names reserved", async () => {
    const tenant = await seedOrganization(unconfigured.app, "Tenant");
    for (const local of ["billing", "postmaster", "abuse", "hostmaster", "webmaster", "admin", "administrator"]) {
      const res = await unconfigured.api.post("/v1/inboxes", { email: `${local}@inboxd.test` }, tenant.apiKey);
      expect({ local, status: res.status }).toEqual({ local, status: 422 });
    }
    expect((await unconfigured.api.post("/v1/inboxes", { email: "noc@inboxd.test" }, tenant.apiKey)).status).toBe(201);
  });

  test("the INBOXD_POSTMASTER_INBOX address stays the operator's: no organization may create it", async () => {
    const res = await create(OPERATOR_INBOX.toUpperCase(), operator.apiKey);
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith("email:");
  });

  test("org B cannot split org A's subaddressed mail: support+x@ stays with support@'s owner", async () => {
    const support = (await create("helpdesk@inboxd.test")).body;
    expect((await create("helpdesk+x@inboxd.test", other.apiKey)).status).toBe(422);
    expect((await deliver(server, ["helpdesk+x@inboxd.test"], "tagged for A")).code).toBe(250);
    expect(await subjects(support.id, org.apiKey)).toContain("tagged for A");
  });
});

describe("a verified custom domain", () => {
  beforeAll(() => verifiedDomain("own.example"));

  test("its organization may use role names there", async () => {
    for (const local of ["postmaster", "admin", "abuse"]) {
      const res = await create(`${local}@own.example`);
      expect(res.status).toBe(201);
      expect(res.body.email).toBe(`${local}@own.example`);
    }
  });

  test("but not a subaddress", async () => {
    const res = await create("team+x@own.example");
    expect(res.status).toBe(422);
    expect(res.body.error).toStartWith('email: "+" may not appear');
  });

  test("its postmaster@ inbox receives the domain's postmaster mail", async () => {
    const inbox = (await server.app.store.inboxes.findByEmail("postmaster@own.example"))!;
    expect((await deliver(server, ["PostMaster@own.example"], "for the domain's own postmaster")).code).toBe(250);
    expect(await subjects(inbox.id, org.apiKey)).toContain("for the domain's own postmaster");
  });
});

describe("postmaster over SMTP (RFC 5321 §4.5.1)", () => {
  test("without INBOXD_POSTMASTER_INBOX, <postmaster> and the reserved names are refused with a reply that says so", async () => {
    for (const address of ["postmaster", "Postmaster", "postmaster@inboxd.test", "abuse@inboxd.test", "admin+ca@inboxd.test", "billing@inboxd.test"]) {
      const reply = await rcpt(unconfigured, address);
      expect(reply.code).toBe(550);
      expect(reply.text).toMatch(/^550 5\.1\.1 Mail for .+ goes to the operator of this server, who has not configured an inbox for it \(INBOXD_POSTMASTER_INBOX\)$/);
    }
    expect((await rcpt(unconfigured, "nobody@inboxd.test")).text).toBe("550 5.1.1 No such user here");
  });

  test("with it, <postmaster> is deferred while the operator's inbox is missing, then delivered there; so is postmaster at the host name", async () => {
    expect((await rcpt(server, "POSTMASTER")).text).toMatch(/^451 4\.3\.0 /);
    // The operator creates the inbox before naming it in INBOXD_POSTMASTER_INBOX; the API refuses it afterwards.
    const desk = await server.app.store.transaction((tx) => insertInbox(server.app, tx, operator.organizationId, { email: OPERATOR_INBOX }));
    const reply = await deliver(server, ["postmaster"], "bare postmaster");
    expect(reply.text).toStartWith("250 ");
    expect(await subjects(desk.id, operator.apiKey)).toContain("bare postmaster");
    expect((await deliver(server, ["PostMaster@MX.inboxd.test"], "postmaster of the host")).text).toStartWith("250 ");
    expect(await subjects(desk.id, operator.apiKey)).toContain("postmaster of the host");
    expect((await rcpt(server, "abuse@mx.inboxd.test")).text).toBe("550 5.7.1 Relaying denied");
  });

  test("the reserved names and their subaddresses reach the operator, even where an organization created one before it was reserved", async () => {
    const desk = await server.app.store.inboxes.findByEmail(OPERATOR_INBOX) ?? await server.app.store.transaction((tx) => insertInbox(server.app, tx, operator.organizationId, { email: OPERATOR_INBOX }));
    const legacy = await server.app.store.transaction((tx) => insertInbox(server.app, tx, other.organizationId, { email: "admin@inboxd.test" }));
    expect((await deliver(server, ["Admin@inboxd.test", "abuse+report@inboxd.test", "postmaster@inboxd.test"], "domain validation")).text).toStartWith("250 ");
    expect(await subjects(desk.id, operator.apiKey)).toContain("domain validation");
    expect(await subjects(legacy.id, other.apiKey)).not.toContain("domain validation");
  });

  test("the operator's inbox cannot be deleted while INBOXD_POSTMASTER_INBOX names it (no one could create it again): 409, by itself, with its domain, or by a claim of its domain", async () => {
    const desk = await server.app.store.inboxes.findByEmail(OPERATOR_INBOX) ?? await server.app.store.transaction((tx) => insertInbox(server.app, tx, operator.organizationId, { email: OPERATOR_INBOX }));
    expect((await deliver(server, ["postmaster"], "kept through a delete")).text).toStartWith("250 ");
    const deleted = await server.api.request("DELETE", `/v1/inboxes/${desk.id}`, { token: operator.apiKey });
    expect(deleted).toMatchObject({ status: 409, body: { error: `${OPERATOR_INBOX} receives the operator's postmaster mail (INBOXD_POSTMASTER_INBOX); it can be deleted once that setting names another inbox` } });
    expect(await subjects(desk.id, operator.apiKey)).toContain("kept through a delete");
    expect((await deliver(server, ["postmaster"], "after the refused delete")).text).toStartWith("250 ");

    // On a custom domain, deleted with it (force) the inbox would go too: the domain stays, its inbox and mail with it.
    const onDomain = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_POSTMASTER_INBOX: "desk@ops.example" } });
    try {
      const owner = await seedOrganization(onDomain.app, "Operator");
      const created = await onDomain.api.post("/v1/domains", { name: "ops.example" }, owner.apiKey);
      expect(created.status).toBe(201);
      const inbox = await onDomain.app.store.transaction((tx) => insertInbox(onDomain.app, tx, owner.organizationId, { email: "desk@ops.example" }));
      const forced = await onDomain.api.request("DELETE", "/v1/domains/ops.example?force=true", { token: owner.apiKey });
      expect(forced).toMatchObject({ status: 409, body: { error: "desk@ops.example receives the operator's postmaster mail (INBOXD_POSTMASTER_INBOX); it can be deleted once that setting names another inbox" } });
      expect((await onDomain.api.request("GET", `/v1/inboxes/${inbox.id}`, { token: owner.apiKey })).status).toBe(200);
      // Nor does the claim of the domain moving to an organization that proves it in DNS.
      const claimant = await seedOrganization(onDomain.app, "Claimant");
      dns.set("ops.example", "TXT", [claimRecord(onDomain.app.store, claimant.organizationId, created.body.id, "ops.example").value]);
      const claimed = await onDomain.api.post("/v1/domains", { name: "ops.example" }, claimant.apiKey);
      expect(claimed).toMatchObject({ status: 409, body: { error: "desk@ops.example receives the operator's postmaster mail (INBOXD_POSTMASTER_INBOX); it can be deleted once that setting names another inbox" } });
      expect((await onDomain.api.request("GET", `/v1/inboxes/${inbox.id}`, { token: owner.apiKey })).status).toBe(200);
    } finally {
      await onDomain.cleanup();
    }
  });

  test("postmaster of a custom domain without an inbox of its own reaches the operator", async () => {
    const desk = await server.app.store.inboxes.findByEmail(OPERATOR_INBOX) ?? await server.app.store.transaction((tx) => insertInbox(server.app, tx, operator.organizationId, { email: OPERATOR_INBOX }));
    await verifiedDomain("bare.example", other);
    expect((await deliver(server, ["postmaster@bare.example"], "custom domain postmaster")).text).toStartWith("250 ");
    expect(await subjects(desk.id, operator.apiKey)).toContain("custom domain postmaster");
    // Only postmaster: other role names there are the domain organization's business.
    expect((await rcpt(server, "abuse@bare.example")).text).toBe("550 5.1.1 No such user here");
  });
});

describe("a host name that is also the mail domain", () => {
  test("the server's own addresses there, tlsrpt@ (TLS reports) and bounces@ (return paths), are 422: their mail is read as reports, never an inbox's", async () => {
    const sameHost = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_HOSTNAME: "inboxd.test" } });
    try {
      const tenant = await seedOrganization(sameHost.app, "Tenant");
      const created = async (email: string) => sameHost.api.post("/v1/inboxes", { email }, tenant.apiKey);
      expect((await created("TLSRPT@inboxd.test")).body).toEqual({ error: "email: tlsrpt@inboxd.test is this server's own address, where TLS reports come (RFC 8460); choose another name" });
      expect((await created("bounces@inboxd.test")).body.error).toStartWith("email: bounces@inboxd.test is this server's own address, the return path of its deliveries");
      expect((await created("tlsrpt-team@inboxd.test")).status).toBe(201);
    } finally {
      await sameHost.cleanup();
    }
    // Where the host name is another name, they are names like any other on the mail domain.
    expect((await create("tlsrpt@inboxd.test")).status).toBe(201);
  });
});
