import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { certificateNames } from "../../src/certs/names";
import { generateDkimKeys, dkimTxtValue } from "../../src/dkim/keys";
import { assertUsableInboxDomain, isHostedDomain } from "../../src/domains/hosted";
import { claimRecord } from "../../src/domains/ownership";
import { ServiceError } from "../../src/errors";
import { newId } from "../../src/ids";
import { insertInbox } from "../../src/inboxes/service";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { publishRecords, recordOf, type ApiRecord } from "./zone";

const HOSTNAME = "mx.inboxd.test";
const SERVER_IP = "192.0.2.10";

let dns: DnsServer;
let server: TestServer;
let org: { organizationId: string; apiKey: string };
let other: { organizationId: string; apiKey: string };

beforeAll(async () => {
  dns = await startDnsServer();
  // The server's own address, which SPF's a: mechanism and the SPF check both resolve.
  dns.set(HOSTNAME, "A", [SERVER_IP]);
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address } });
  org = await seedOrganization(server.app, "Acme");
  other = await seedOrganization(server.app, "Other");
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
});

const post = (path: string, body?: unknown, key = org.apiKey) => server.api.post(path, body, key);
const get = (path: string, key = org.apiKey) => server.api.get(path, key);
const del = (path: string, key = org.apiKey) => server.api.delete(path, key);

test("the same name added twice at the same moment: one 201 and one 409, never a 500", async () => {
  const racers = await Promise.all(["Racer one", "Racer two"].map(async (name) => (await seedOrganization(server.app, name)).apiKey));
  for (let round = 0; round < 10; round++) {
    const name = `race${round}.example`;
    const statuses = (await Promise.all(racers.map((key) => post("/v1/domains", { name }, key)))).map((res) => res.status);
    expect({ name, statuses: statuses.sort() }).toEqual({ name, statuses: [201, 409] });
  }
}, 60_000);

async function createDomain(name: string, key = org.apiKey) {
  const res = await post("/v1/domains", { name }, key);
  expect(res.status).toBe(201);
  return res.body;
}

/** A domain whose every record is published and verified. */
async function verifiedDomain(name: string, key = org.apiKey) {
  const domain = await createDomain(name, key);
  publishRecords(dns, domain.records);
  const res = await post(`/v1/domains/${domain.id}/verify`, {}, key);
  expect(res.body.status).toBe("verified");
  return res.body;
}

const statuses = (records: ApiRecord[]) => records.map((record) => record.status);

describe("create", () => {
  test("201 with the Domain and the records to publish, all pending", async () => {
    const domain = await createDomain("shape.example");
    expect(Object.keys(domain).sort()).toEqual(["_id", "createdAt", "id", "name", "organizationId", "receiving", "records", "sending", "status", "updatedAt", "verified"]);
    expect(domain).toMatchObject({ _id: domain.id, organizationId: org.organizationId, name: "shape.example", status: "pending", verified: false, receiving: false, sending: false });
    expect(domain.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const records: ApiRecord[] = domain.records;
    expect(records.map((record) => [record.type, record.name.replace(/^inboxd\d{8}/, "SEL"), record.purpose])).toEqual([
      ["MX", "shape.example", "receiving"],
      ["TXT", "shape.example", "sending"],
      ["TXT", "SELr._domainkey.shape.example", "sending"],
      ["TXT", "SELe._domainkey.shape.example", "sending"],
      ["TXT", "_dmarc.shape.example", "sending"],
      ["CNAME", "mta-sts.shape.example", "tls"],
      ["TXT", "_mta-sts.shape.example", "tls"],
      ["TXT", "_smtp._tls.shape.example", "tls"],
    ]);
    expect(records[0]).toEqual({ type: "MX", name: "shape.example", value: HOSTNAME, priority: 10, purpose: "receiving", status: "pending" });
    expect(records[1]).toEqual({ type: "TXT", name: "shape.example", value: `v=spf1 a:${HOSTNAME} -all`, purpose: "sending", status: "pending" });
    expect(records[2].value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{300,}={0,2}$/);
    expect(records[3].value).toMatch(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
    expect(records[4].value).toStartWith("v=DMARC1; p=quarantine;");
    expect(records[5]).toEqual({ type: "CNAME", name: "mta-sts.shape.example", value: HOSTNAME, purpose: "tls", status: "pending" });
    expect(records[6].value).toMatch(/^v=STSv1; id=[0-9a-f]{32}$/);
    expect(records[7].value).toBe("v=TLSRPTv1; rua=mailto:tlsrpt@mx.inboxd.test");
    for (const record of records.slice(1)) expect(record).not.toHaveProperty("priority");
  });

  test("an RSA-2048 and an Ed25519 key are stored for it, and neither signs before its record verifies", async () => {
    await createDomain("keys.example");
    const keys = await server.app.store.dkimKeys.forDomain("keys.example");
    expect(keys.map((key) => [key.algorithm, key.status, key.organizationId]).sort()).toEqual([
      ["ed25519-sha256", "pending", org.organizationId],
      ["rsa-sha256", "pending", org.organizationId],
    ]);
    expect(await server.app.store.dkimKeys.activeForDomain("keys.example")).toEqual([]);
  });

  test("names are stored lower-case, without the root dot, and IDN names as A-labels", async () => {
    expect((await createDomain("MiXeD.Example.")).name).toBe("mixed.example");
    const idn = await createDomain("Bücher.example");
    expect(idn.name).toBe("xn--bcher-kva.example");
    expect(idn.records[0].name).toBe("xn--bcher-kva.example");
  });

  test("a name that is not a domain name is 422 naming the field", async () => {
    for (const name of ["", "localhost", "exa mple.com", "-bad.example", "192.168.0.1", "a..example", "example.com/path", "ex%41mple.com", "example.com:25", "under_score.example", "tab\t.example", `${"a".repeat(64)}.example`, "user@example.com"]) {
      const res = await post("/v1/domains", { name });
      expect({ name, status: res.status }).toEqual({ name, status: 422 });
      expect(res.body.error).toStartWith("name:");
    }
    for (const body of [{}, { name: 5 }]) {
      const res = await post("/v1/domains", body);
      expect(res.status).toBe(422);
      expect(res.body.error).toContain("name");
    }
  });

  test("the service's own mail domain and its subdomains are refused; a look-alike is not", async () => {
    for (const name of ["inboxd.test", "INBOXD.test", "sub.inboxd.test"]) {
      const res = await post("/v1/domains", { name });
      expect(res.status).toBe(422);
      expect(res.body.error).toContain("service's own mail domain");
    }
    expect((await createDomain("notinboxd.test")).name).toBe("notinboxd.test");
  });

  test("the server's host names (INBOXD_HOSTNAME, INBOXD_API_HOSTNAME) are refused, outside the mail domain too; their subdomains and parent are not", async () => {
    const own = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_HOSTNAME: "mx.hostbox.test", INBOXD_API_HOSTNAME: "api.hostbox.test" } });
    try {
      const { apiKey } = await seedOrganization(own.app);
      for (const [name, setting] of [["MX.hostbox.test", "INBOXD_HOSTNAME"], ["api.hostbox.test.", "INBOXD_API_HOSTNAME"]]) {
        const res = await own.api.post("/v1/domains", { name }, apiKey);
        expect(res.status).toBe(422);
        expect(res.body.error).toContain(`this server's host name (${setting})`);
      }
      for (const name of ["hostbox.test", "a.mx.hostbox.test"]) expect((await own.api.post("/v1/domains", { name }, apiKey)).status).toBe(201);
    } finally {
      await own.cleanup();
    }
  });

  test("a name already added is 409; one claimed by another organization is 409 too, saying what its owner publishes to take it", async () => {
    const claimed = await createDomain("claimed.example");
    const again = await post("/v1/domains", { name: "Claimed.Example" });
    expect(again.status).toBe(409);
    expect(again.body.error).toContain("already exists");
    const stolen = await post("/v1/domains", { name: "claimed.example" }, other.apiKey);
    expect(stolen.status).toBe(409);
    const record = claimRecord(server.app.store, other.organizationId, claimed.id, "claimed.example");
    expect(record.value).toMatch(/^inboxd-claim=[0-9a-f]{32}$/);
    expect(stolen.body.error).toBe(`Domain claimed.example is already claimed by another organization. If it is yours, publish the TXT record claimed.example "${record.value}" and add it again: the claim then moves to this organization`);
  });

  /** The name's TXT records: its SPF record (as its records list it) and the claim records given. */
  const publishClaims = (domain: { name: string; records: ApiRecord[] }, ...claims: { value: string }[]) =>
    dns.set(domain.name, "TXT", [recordOf(domain.records, "SPF").value, ...claims.map((claim) => claim.value)]);

  test("the claim of a name moves to the organization its DNS names, with the inboxes the other made on it; a record left published takes it from no later holder", async () => {
    // A squatter adds the name first; the owner points the MX here, so the squatter's claim receives.
    const squatter = await seedOrganization(server.app, "Squatter");
    const squatted = await verifiedDomain("owned.example", squatter.apiKey);
    const inbox = await server.app.store.transaction((tx) => insertInbox(server.app, tx, squatter.organizationId, { email: "sales@owned.example" }));
    const owner = await seedOrganization(server.app, "Owner");
    expect((await post("/v1/domains", { name: "owned.example" }, owner.apiKey)).status).toBe(409);
    // The squatter's own record for its claim, or a wrong value, proves nothing for the owner.
    publishClaims(squatted, claimRecord(server.app.store, squatter.organizationId, squatted.id, squatted.name), { value: "inboxd-claim=wrong" });
    expect((await post("/v1/domains", { name: "owned.example" }, owner.apiKey)).status).toBe(409);

    const ownersRecord = claimRecord(server.app.store, owner.organizationId, squatted.id, squatted.name);
    publishClaims(squatted, ownersRecord);
    const moved = await post("/v1/domains", { name: "OWNED.example" }, owner.apiKey);
    expect(moved.status).toBe(201);
    expect(moved.body).toMatchObject({ organizationId: owner.organizationId, name: "owned.example", status: "pending", receiving: false });
    expect(recordOf(moved.body.records, "DKIM-RSA").value).not.toBe(recordOf(squatted.records, "DKIM-RSA").value);
    expect((await get(`/v1/domains/${squatted.id}`, squatter.apiKey)).status).toBe(404);
    expect(await server.app.store.inboxes.find(squatter.organizationId, inbox.id)).toBeUndefined();
    const events = await queryRows<{ inbox_id: string }>(server.app, "SELECT inbox_id FROM events WHERE type = 'inbox.deleted' AND organization_id = ?", squatter.organizationId);
    expect(events).toEqual([{ inbox_id: inbox.id }]);
    expect((await server.app.store.dkimKeys.forDomain("owned.example")).map((key) => key.organizationId)).toEqual([owner.organizationId, owner.organizationId]);
    // Now the owner's: the squatter cannot take it back (it cannot publish there), and the owner's address is free.
    expect((await post("/v1/domains", { name: "owned.example" }, squatter.apiKey)).status).toBe(409);
    publishRecords(dns, moved.body.records);
    expect((await post("/v1/domains/owned.example/verify", {}, owner.apiKey)).body.receiving).toBe(true);
    expect((await post("/v1/inboxes", { email: "sales@owned.example" }, owner.apiKey)).status).toBe(201);

    // The owner moves the name on to another organization of its own and leaves its first record
    // published: that record named the squatter's claim, so it takes the new holder's from no one.
    const successor = await seedOrganization(server.app, "Successor");
    publishClaims(moved.body, ownersRecord, claimRecord(server.app.store, successor.organizationId, moved.body.id, moved.body.name));
    expect((await post("/v1/domains", { name: "owned.example" }, successor.apiKey)).status).toBe(201);
    const replayed = await post("/v1/domains", { name: "owned.example" }, owner.apiKey);
    expect(replayed.status).toBe(409);
    expect(replayed.body.error).toContain("already claimed by another organization");
  });

  test("a name is at most 222 characters, the most its DKIM records' names leave within DNS's 253", async () => {
    const label = "a".repeat(60);
    const tooLong = await post("/v1/domains", { name: `${label}.${label}.${label}.${"c".repeat(32)}.example` });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error).toStartWith("name: at most 222 characters");
    const name = `${label}.${label}.${label}.${"c".repeat(31)}.example`;
    expect(name).toHaveLength(222);
    const longest = await createDomain(name);
    const rotated = (await post(`/v1/domains/${longest.id}/rotate-dkim`, {})).body;
    const recordNames: string[] = [...longest.records, ...rotated.records].map((record: { name: string }) => record.name);
    expect(recordNames.filter((recordName) => recordName.includes("._domainkey.")).length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...recordNames.map((recordName) => recordName.length))).toBeLessThanOrEqual(253);
  });

  test("a name as long as inboxd allows can be taken back: its claim record is at the name itself", async () => {
    const label = "a".repeat(60);
    const name = `${label}.${label}.${label}.${"b".repeat(31)}.example`;
    expect(name).toHaveLength(222);
    const squatter = await seedOrganization(server.app, "Long squatter");
    const squatted = await createDomain(name, squatter.apiKey);
    const owner = await seedOrganization(server.app, "Long owner");
    publishClaims(squatted, claimRecord(server.app.store, owner.organizationId, squatted.id, name));
    expect((await post("/v1/domains", { name }, owner.apiKey)).status).toBe(201);
  });

  test("without an API key: 401", async () => {
    expect((await server.api.post("/v1/domains", { name: "nokey.example" })).status).toBe(401);
    expect((await server.api.get("/v1/domains")).status).toBe(401);
  });
});

describe("read", () => {
  test("list: the organization's domains, newest first, paginated", async () => {
    const a = await createDomain("list-a.example", other.apiKey);
    const b = await createDomain("list-b.example", other.apiKey);
    const res = await get("/v1/domains", other.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.map((domain: any) => domain.name)).toEqual(["list-b.example", "list-a.example"]);
    expect(res.body[0]).toEqual(b);
    expect((await get("/v1/domains?per=1&page=2", other.apiKey)).body).toEqual([a]);
    expect((await get("/v1/domains?per=0")).status).toBe(422);
    expect((await get("/v1/domains?per=101")).status).toBe(422);
    expect((await get("/v1/domains")).body.map((domain: any) => domain.organizationId)).not.toContain(other.organizationId);
  });

  test("get by identifier and by name (any case, IDN form)", async () => {
    const domain = await createDomain("getme.example");
    for (const key of [domain.id, "getme.example", "GetMe.Example"]) {
      const res = await get(`/v1/domains/${encodeURIComponent(key)}`);
      expect({ key, status: res.status }).toEqual({ key, status: 200 });
      expect(res.body).toEqual(domain);
    }
    const idn = await createDomain("straße-get.example");
    expect((await get(`/v1/domains/${encodeURIComponent("straße-get.example")}`)).body.id).toBe(idn.id);
  });

  test("dns: the records with their statuses, a list as every list is (page and per, 422 out of range)", async () => {
    const domain = await createDomain("dns.example");
    const res = await get(`/v1/domains/dns.example/dns`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(domain.records);
    expect(res.headers.get("x-total-count")).toBe(String(domain.records.length));
    const second = await get(`/v1/domains/dns.example/dns?per=2&page=2`);
    expect(second.body).toEqual(domain.records.slice(2, 4));
    expect(second.headers.get("link")).toContain('rel="next"');
    for (const query of ["per=0", "per=101", "page=0", "page=abc"]) expect((await get(`/v1/domains/dns.example/dns?${query}`)).status).toBe(422);
  });

  test("an unknown domain, or another organization's, is 404 Domain not found on every route", async () => {
    const theirs = await createDomain("theirs.example", other.apiKey);
    for (const key of ["dom_unknown", "unknown.example", theirs.id, "theirs.example"]) {
      const replies = await Promise.all([
        get(`/v1/domains/${key}`),
        get(`/v1/domains/${key}/dns`),
        post(`/v1/domains/${key}/verify`),
        post(`/v1/domains/${key}/rotate-dkim`),
        del(`/v1/domains/${key}`),
      ]);
      for (const res of replies) expect({ key, status: res.status, body: res.body }).toEqual({ key, status: 404, body: { error: "Domain not found" } });
    }
    expect((await get(`/v1/domains/${theirs.id}`, other.apiKey)).status).toBe(200);
  });
});

describe("verify", () => {
  test("before the zone holds the records every record is pending with its reason; after, all verified", async () => {
    const domain = await createDomain("verify.example");
    const before = await post(`/v1/domains/${domain.id}/verify`);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ status: "pending", verified: false, receiving: false, sending: false });
    expect(statuses(before.body.records)).toEqual(["pending", "pending", "pending", "pending", "pending", "pending", "pending", "pending"]);
    expect(recordOf(before.body.records, "MX").reason).toBe("no MX record at verify.example");
    expect(recordOf(before.body.records, "SPF").reason).toBe("no SPF record at verify.example");
    expect(recordOf(before.body.records, "DKIM-RSA").reason).toStartWith("no DKIM record at inboxd");
    expect(recordOf(before.body.records, "DMARC").reason).toBe("no DMARC record at _dmarc.verify.example");

    publishRecords(dns, domain.records);
    const after = await post(`/v1/domains/verify.example/verify`);
    expect(after.body).toMatchObject({ status: "verified", verified: true, receiving: true, sending: true });
    expect(statuses(after.body.records)).toEqual(["verified", "verified", "verified", "verified", "verified", "verified", "verified", "verified"]);
    for (const record of after.body.records) expect(record).not.toHaveProperty("reason");
    expect(Date.parse(after.body.verifiedAt)).toBeGreaterThanOrEqual(Date.parse(domain.createdAt));
    expect((await get(`/v1/domains/${domain.id}/dns`)).body).toEqual(after.body.records);
    expect((await server.app.store.dkimKeys.activeForDomain("verify.example")).map((key) => key.algorithm).sort()).toEqual(["ed25519-sha256", "rsa-sha256"]);
  });

  test("a record's reason quotes what the domain publishes on one line, its control characters (a NUL, an escape sequence) replaced and cut at 1,000 characters", async () => {
    const domain = await createDomain("noisy-txt.example");
    publishRecords(dns, domain.records.filter((record: ApiRecord) => record.purpose !== "tls"));
    dns.set("_smtp._tls.noisy-txt.example", "TXT", [`v=TLSRPTv1; rua=mailto:a\0b@elsewhere.example; x=\x1b[2J${"z".repeat(1_200)}`]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.status).toBe(200);
    const reason: string = res.body.records.find((record: ApiRecord) => record.name === "_smtp._tls.noisy-txt.example").reason;
    expect(reason).toStartWith("_smtp._tls.noisy-txt.example publishes 'v=TLSRPTv1; rua=mailto:a\ufffdb@elsewhere.example; x=\ufffd[2Jzzz");
    expect(reason).toMatch(/… \(\d+ more characters\)$/);
    expect((await get(`/v1/domains/${domain.id}`)).body.records).toEqual(res.body.records);
  });

  test("the tls records (MTA-STS, TLS reporting) are recommended: without them the domain is verified, with a wrong one too", async () => {
    const domain = await createDomain("notls.example");
    publishRecords(dns, domain.records.filter((record: ApiRecord) => record.purpose !== "tls"));
    dns.set("_smtp._tls.notls.example", "TXT", ["v=TLSRPTv1; rua=mailto:someone@elsewhere.example"]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.body).toMatchObject({ status: "verified", verified: true, receiving: true, sending: true });
    const tls = res.body.records.filter((record: ApiRecord) => record.purpose === "tls");
    expect(tls.map((record: ApiRecord) => [record.type, record.status, record.reason])).toEqual([
      ["CNAME", "pending", "mta-sts.notls.example has no CNAME or A/AAAA record"],
      ["TXT", "pending", "no v=STSv1 record at _mta-sts.notls.example"],
      ["TXT", "failed", "_smtp._tls.notls.example publishes 'v=TLSRPTv1; rua=mailto:someone@elsewhere.example', without 'v=TLSRPTv1; rua=mailto:tlsrpt@mx.inboxd.test'"],
    ]);
    // An extension tag beside ours (RFC 8461 §3.1), and another report address beside ours (RFC 8460 §3): verified.
    const sts = domain.records.find((record: ApiRecord) => record.name === "_mta-sts.notls.example")!;
    dns.set(sts.name, "TXT", [`${sts.value}; ext=1`]);
    dns.set("_smtp._tls.notls.example", "TXT", ["v=TLSRPTv1; rua=mailto:tlsrpt@mx.inboxd.test,mailto:me@notls.example"]);
    const again = await post(`/v1/domains/${domain.id}/verify`);
    expect(again.body.records.filter((record: ApiRecord) => record.type === "TXT" && record.purpose === "tls").map((record: ApiRecord) => record.status)).toEqual(["verified", "verified"]);
  });

  test("an MX that names this server only as a backup (a lower preference than another host) fails, with the host mail goes to first", async () => {
    const domain = await createDomain("backupmx.example");
    publishRecords(dns, domain.records);
    dns.set("backupmx.example", "MX", [{ exchange: "mx.elsewhere.example", priority: 1 }, { exchange: `${HOSTNAME}.`, priority: 50 }]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.body).toMatchObject({ receiving: false });
    expect(recordOf(res.body.records, "MX")).toMatchObject({ status: "failed", reason: `the MX records of backupmx.example prefer mx.elsewhere.example (1) over ${HOSTNAME} (50): mail goes there first` });
    dns.set("backupmx.example", "MX", [{ exchange: "mx.elsewhere.example", priority: 10 }, { exchange: `${HOSTNAME}.`, priority: 10 }]);
    expect(recordOf((await post(`/v1/domains/${domain.id}/verify`)).body.records, "MX").status).toBe("verified");
    // This server named twice, the less preferred first: an RRset has no order, and the most preferred of ours counts.
    dns.set("backupmx.example", "MX", [{ exchange: `${HOSTNAME}.`, priority: 20 }, { exchange: `${HOSTNAME}.`, priority: 5 }, { exchange: "mx.elsewhere.example", priority: 10 }]);
    expect(recordOf((await post(`/v1/domains/${domain.id}/verify`)).body.records, "MX").status).toBe("verified");
  });

  test("the MX record alone makes the domain receiving, not sending", async () => {
    const domain = await createDomain("mxonly.example");
    const mx = recordOf(domain.records, "MX");
    dns.set(mx.name, "MX", [{ exchange: `${HOSTNAME}.`, priority: 20 }, { exchange: "backup.elsewhere.example", priority: 30 }]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.body).toMatchObject({ status: "pending", verified: false, receiving: true, sending: false });
    expect(res.body).not.toHaveProperty("verifiedAt");
    expect(statuses(res.body.records)).toEqual(["verified", "pending", "pending", "pending", "pending", "pending", "pending", "pending"]);
  });

  test("an SPF record that includes another domain's policy passes when that policy authorises this server", async () => {
    const domain = await createDomain("spfinclude.example");
    publishRecords(dns, domain.records.filter((record: ApiRecord) => !record.value.startsWith("v=spf1")));
    dns.set("spfinclude.example", "TXT", ["google-site-verification=abc", "v=spf1 include:_spf.provider.example ~all"]);
    dns.set("_spf.provider.example", "TXT", [`v=spf1 ip4:198.51.100.0/24 ip4:${SERVER_IP} -all`]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(recordOf(res.body.records, "SPF").status).toBe("verified");
    expect(res.body.status).toBe("verified");
  });

  test("an SPF record that does not authorise this server, and an MX pointing elsewhere, fail with their reasons", async () => {
    const domain = await createDomain("wrong.example");
    publishRecords(dns, domain.records);
    dns.set("wrong.example", "TXT", ["v=spf1 ip4:198.51.100.7 -all"]);
    dns.set("wrong.example", "MX", [{ exchange: "mail.elsewhere.example", priority: 10 }]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.body).toMatchObject({ status: "failed", verified: false, receiving: false, sending: false });
    expect(recordOf(res.body.records, "SPF")).toMatchObject({ status: "failed", reason: `the SPF record of wrong.example does not authorise this server's address ${SERVER_IP} (result: fail)` });
    expect(recordOf(res.body.records, "MX")).toMatchObject({ status: "failed", reason: `the MX records of wrong.example point to mail.elsewhere.example, not to ${HOSTNAME}` });
    expect(recordOf(res.body.records, "DKIM-RSA").status).toBe("verified");
  });

  test("a DKIM record that publishes another key fails, and that key does not sign", async () => {
    const domain = await createDomain("dkimmismatch.example");
    publishRecords(dns, domain.records);
    const rsa = recordOf(domain.records, "DKIM-RSA");
    const [foreign] = await generateDkimKeys(new Date());
    dns.set(rsa.name, "TXT", [dkimTxtValue(foreign)]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.body).toMatchObject({ status: "failed", verified: false, receiving: true, sending: true });
    expect(recordOf(res.body.records, "DKIM-RSA")).toMatchObject({ status: "failed", reason: `the DKIM record at ${rsa.name} publishes another key than this domain's` });
    expect((await server.app.store.dkimKeys.activeForDomain("dkimmismatch.example")).map((key) => key.algorithm)).toEqual(["ed25519-sha256"]);
  });

  test("a former service mail domain's keys, left in the database, neither clash with the keys of an organization that adds the name nor sign its mail", async () => {
    const now = server.clock.now();
    const serviceKeys = (await generateDkimKeys(new Date(now))).map((key) => ({ id: newId("dkim"), domain: "former.example", organizationId: null, ...key, status: "active" as const, createdAt: now, updatedAt: now }));
    await server.app.store.transaction((tx) => tx.dkimKeys.insert(serviceKeys));
    const res = await post("/v1/domains", { name: "former.example" });
    expect(res.status).toBe(201);
    const published = res.body.records.filter((record: { name: string }) => record.name.includes("._domainkey."));
    expect(published).toHaveLength(2);
    const keys = await server.app.store.dkimKeys.forDomain("former.example");
    expect(keys.map((key) => key.organizationId)).toEqual([res.body.organizationId, res.body.organizationId]);
    expect(await server.app.store.dkimKeys.activeForDomain("former.example")).toEqual([]);
  });

  test("a DKIM record a verifier discards fails, though mailauth's lenient reading takes our key from it: v=dkim1, a syntax error, k= not in lower case, an Ed25519 key without k=", async () => {
    const domain = await verifiedDomain("dkimstrict.example");
    const rsa = recordOf(domain.records, "DKIM-RSA");
    const ed25519 = recordOf(domain.records, "DKIM-ED25519");
    const variants: ["DKIM-RSA" | "DKIM-ED25519", string, string][] = [
      ["DKIM-RSA", rsa.value.replace("v=DKIM1", "v=dkim1"), "Unknown key version"],
      ["DKIM-RSA", `${rsa.value}; x`, "Invalid key record syntax"],
      ["DKIM-RSA", rsa.value.replace("k=rsa", "k=RSA"), "k=RSA names no key type"],
      ["DKIM-ED25519", ed25519.value.replace("k=ed25519", "k=ED25519"), "k=ED25519 names no key type"],
      ["DKIM-ED25519", ed25519.value.replace("k=ed25519; ", ""), "Unknown key type"],
    ];
    for (const [kind, value, reason] of variants) {
      dns.set(recordOf(domain.records, kind).name, "TXT", [value]);
      const res = await post(`/v1/domains/${domain.id}/verify`);
      expect(recordOf(res.body.records, kind)).toMatchObject({ status: "failed", reason: expect.stringContaining(reason) });
      publishRecords(dns, domain.records);
    }
    expect((await post(`/v1/domains/${domain.id}/verify`)).body).toMatchObject({ status: "verified", sending: true });
  });

  test("a signing key whose record fails later (h=sha1, which refuses our rsa-sha256; or gone) stops signing until it verifies again", async () => {
    const domain = await verifiedDomain("dkimlater.example");
    const active = async () => (await server.app.store.dkimKeys.activeForDomain("dkimlater.example")).map((key) => key.algorithm);
    expect(await active()).toEqual(["ed25519-sha256", "rsa-sha256"]);
    const rsa = recordOf(domain.records, "DKIM-RSA");
    dns.set(rsa.name, "TXT", [rsa.value.replace("k=rsa;", "k=rsa; h=sha1;")]);
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(recordOf(res.body.records, "DKIM-RSA")).toMatchObject({ status: "failed", reason: expect.stringContaining("does not allow sha256") });
    expect(await active()).toEqual(["ed25519-sha256"]);
    const ed25519 = recordOf(domain.records, "DKIM-ED25519");
    dns.remove(ed25519.name, "TXT");
    await post(`/v1/domains/${domain.id}/verify`);
    expect(await active()).toEqual([]);
    publishRecords(dns, domain.records);
    expect((await post(`/v1/domains/${domain.id}/verify`)).body).toMatchObject({ status: "verified", sending: true });
    expect(await active()).toEqual(["ed25519-sha256", "rsa-sha256"]);
  });

  test("a verified domain whose records vanish turns failed, with the reason; a DNS outage changes nothing", async () => {
    const domain = await verifiedDomain("vanish.example");
    dns.failNext("vanish.example", "SERVFAIL", 20);
    const outage = await post(`/v1/domains/${domain.id}/verify`);
    expect(outage.body).toMatchObject({ status: "verified", receiving: true, verifiedAt: domain.verifiedAt });
    dns.failNext("vanish.example", "SERVFAIL", 0);
    expect(await isHostedDomain(server.app, server.app.store, "vanish.example")).toBe(true);

    dns.remove("vanish.example", "MX");
    const res = await post(`/v1/domains/${domain.id}/verify`);
    expect(res.body).toMatchObject({ status: "failed", verified: false, receiving: false, sending: true });
    expect(res.body).not.toHaveProperty("verifiedAt");
    expect(recordOf(res.body.records, "MX")).toMatchObject({ status: "failed", reason: "no longer published: no MX record at vanish.example" });
    expect(await isHostedDomain(server.app, server.app.store, "vanish.example")).toBe(false);

    publishRecords(dns, domain.records);
    expect((await post(`/v1/domains/${domain.id}/verify`)).body).toMatchObject({ status: "verified", receiving: true });
  });
});

describe("using a domain", () => {
  const refusal = async (fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (error) {
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).kind).toBe("invalid");
      return (error as ServiceError).message;
    }
    throw new Error("expected a refusal");
  };

  test("inboxes may use the service domain, or the organization's domain once receiving is verified", async () => {
    const domain = await createDomain("inboxes.example");
    await expect(assertUsableInboxDomain(server.app, server.app.store, org.organizationId, "inboxd.test")).resolves.toBeUndefined();
    expect(await refusal(() => assertUsableInboxDomain(server.app, server.app.store, org.organizationId, "inboxes.example"))).toBe(
      "email: the domain inboxes.example is not verified for receiving yet; publish its MX record, then POST /v1/domains/inboxes.example/verify",
    );
    expect(await refusal(() => assertUsableInboxDomain(server.app, server.app.store, org.organizationId, "nobody.example"))).toContain("nor a domain of this organization");
    expect(await isHostedDomain(server.app, server.app.store, "inboxes.example")).toBe(false);

    publishRecords(dns, [recordOf(domain.records, "MX")]);
    await post(`/v1/domains/${domain.id}/verify`);
    await expect(assertUsableInboxDomain(server.app, server.app.store, org.organizationId, "Inboxes.Example")).resolves.toBeUndefined();
    expect(await refusal(() => assertUsableInboxDomain(server.app, server.app.store, other.organizationId, "inboxes.example"))).toContain("nor a domain of this organization");
    expect(await isHostedDomain(server.app, server.app.store, "INBOXES.example")).toBe(true);
    expect(await isHostedDomain(server.app, server.app.store, "inboxd.test")).toBe(true);
    expect(await isHostedDomain(server.app, server.app.store, "nobody.example")).toBe(false);
  });

  test("delete: refused while inboxes use the domain; force deletes them with it, each with inbox.deleted", async () => {
    const domain = await verifiedDomain("inuse.example");
    const inboxes = [await server.app.store.transaction((tx) => insertInbox(server.app, tx, org.organizationId, { email: "a@inuse.example" })), await server.app.store.transaction((tx) => insertInbox(server.app, tx, org.organizationId, { email: "b@inuse.example", name: "B" }))];
    const kept = await server.app.store.transaction((tx) => insertInbox(server.app, tx, org.organizationId, { email: "keep@notinuse.inuse.example.org" }));

    const refused = await del(`/v1/domains/${domain.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toContain("used by 2 inboxes");
    expect((await del(`/v1/domains/${domain.id}?force=maybe`)).status).toBe(422);

    const forced = await del(`/v1/domains/${domain.id}?force=true`);
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ id: domain.id, name: "inuse.example", status: "verified" });
    for (const inbox of inboxes) expect(await server.app.store.inboxes.find(org.organizationId, inbox.id)).toBeUndefined();
    expect(await server.app.store.inboxes.find(org.organizationId, kept.id)).toBeDefined();
    const events = await queryRows<{ inbox_id: string; payload: string }>(server.app, "SELECT inbox_id, payload FROM events WHERE type = 'inbox.deleted' AND organization_id = ? ORDER BY id", org.organizationId);
    expect(events.map((event) => event.inbox_id)).toEqual(inboxes.map((inbox) => inbox.id));
    expect(JSON.parse(events[1].payload)).toEqual(inboxes[1]);
    expect(await server.app.store.dkimKeys.forDomain("inuse.example")).toEqual([]);
    expect(await isHostedDomain(server.app, server.app.store, "inuse.example")).toBe(false);
  });

  test("delete without inboxes returns the deleted domain; its keys go, and the name can be added again", async () => {
    const domain = await createDomain("gone.example");
    const res = await del("/v1/domains/gone.example");
    expect(res.status).toBe(200);
    expect(res.body).toEqual(domain);
    expect((await get(`/v1/domains/${domain.id}`)).status).toBe(404);
    expect(await server.app.store.dkimKeys.forDomain("gone.example")).toEqual([]);
    expect((await createDomain("gone.example", other.apiKey)).organizationId).toBe(other.organizationId);
  });
});

describe("DKIM key rotation", () => {
  test("while a rotation's new records are unpublished (the domain pending), its MTA-STS policy host keeps its certificate name: mail still comes here", async () => {
    const domain = await verifiedDomain("stsrotate.example");
    const rotated = await post(`/v1/domains/${domain.id}/rotate-dkim`);
    expect(rotated.body).toMatchObject({ status: "pending", receiving: true });
    expect(await certificateNames(server.app)).toContain("mta-sts.stsrotate.example");
    expect(await server.app.store.domains.receivingNames()).toContain("stsrotate.example");
  });

  test("new keys are published beside the old; they sign once verified; the old stay listed until removed from DNS", async () => {
    const domain = await verifiedDomain("rotate.example");
    const oldKeys = await server.app.store.dkimKeys.activeForDomain("rotate.example");

    const rotated = await post(`/v1/domains/${domain.id}/rotate-dkim`);
    expect(rotated.status).toBe(200);
    const dkim = (records: ApiRecord[]) => records.filter((record) => record.name.includes("._domainkey."));
    expect(dkim(rotated.body.records).map((record) => [record.name.replace(/inboxd\d{8}/, "SEL"), record.status])).toEqual([
      ["SELr._domainkey.rotate.example", "verified"],
      ["SELe._domainkey.rotate.example", "verified"],
      ["SELr2._domainkey.rotate.example", "pending"],
      ["SELe2._domainkey.rotate.example", "pending"],
    ]);
    // The old keys keep signing, so sending stays verified while the new records are not.
    expect(rotated.body).toMatchObject({ status: "pending", verified: false, receiving: true, sending: true });
    expect((await server.app.store.dkimKeys.activeForDomain("rotate.example")).map((key) => key.id)).toEqual(oldKeys.map((key) => key.id));

    publishRecords(dns, rotated.body.records);
    const switched = await post(`/v1/domains/${domain.id}/verify`);
    expect(switched.body).toMatchObject({ status: "verified", sending: true });
    const keys = await server.app.store.dkimKeys.forDomain("rotate.example");
    expect(keys.map((key) => [key.selector.replace(/\d{8}/, ""), key.status]).sort()).toEqual([
      ["inboxde", "retired"],
      ["inboxde2", "active"],
      ["inboxdr", "retired"],
      ["inboxdr2", "active"],
    ]);
    expect(dkim(switched.body.records)).toHaveLength(4);

    for (const record of dkim(switched.body.records).slice(0, 2)) dns.remove(record.name);
    const cleaned = await post(`/v1/domains/${domain.id}/verify`);
    expect(dkim(cleaned.body.records).map((record) => record.name.replace(/inboxd\d{8}/, "SEL"))).toEqual(["SELr2._domainkey.rotate.example", "SELe2._domainkey.rotate.example"]);
    expect(cleaned.body.status).toBe("verified");
  });

  test("a name added again the same day, whose earlier keys DNS still publishes, gets its new keys under the next selectors", async () => {
    const first = await createDomain("readd.example");
    publishRecords(dns, first.records);
    expect((await del(`/v1/domains/${first.id}`)).status).toBe(200);
    const again = await createDomain("readd.example");
    const selectors = (records: ApiRecord[]) => records.filter((record) => record.name.includes("._domainkey.")).map((record) => record.name.split(".")[0].replace(/\d{8}/, ""));
    expect(selectors(first.records)).toEqual(["inboxdr", "inboxde"]);
    expect(selectors(again.records)).toEqual(["inboxdr2", "inboxde2"]);
  });

  test("at most 10 generations of keys a day: the next rotation is 429 with Retry-After until midnight UTC, and makes no key", async () => {
    const domain = await createDomain("rotateloop.example");
    for (let generation = 2; generation <= 10; generation++) expect((await post(`/v1/domains/${domain.id}/rotate-dkim`)).status).toBe(200);
    const keys = (await server.app.store.dkimKeys.forDomain("rotateloop.example")).map((key) => key.selector);
    const refused = await post(`/v1/domains/${domain.id}/rotate-dkim`);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toStartWith("At most 10 generations of DKIM keys a day per domain");
    const now = new Date(server.clock.now());
    const untilMidnight = Math.ceil((Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000);
    expect(Number(refused.headers.get("retry-after"))).toBeWithin(untilMidnight - 5, untilMidnight + 1);
    expect((await server.app.store.dkimKeys.forDomain("rotateloop.example")).map((key) => key.selector)).toEqual(keys);
  });

  test("rotating again before the new keys verified replaces them under fresh selectors", async () => {
    const domain = await createDomain("rerotate.example");
    const first = await post(`/v1/domains/${domain.id}/rotate-dkim`);
    const second = await post(`/v1/domains/${domain.id}/rotate-dkim`);
    const selectors = (records: ApiRecord[]) => records.filter((record) => record.name.includes("._domainkey.")).map((record) => record.name.split(".")[0].replace(/\d{8}/, ""));
    expect(selectors(domain.records)).toEqual(["inboxdr", "inboxde"]);
    expect(selectors(first.body.records)).toEqual(["inboxdr2", "inboxde2"]);
    expect(selectors(second.body.records)).toEqual(["inboxdr3", "inboxde3"]);
  });
});
