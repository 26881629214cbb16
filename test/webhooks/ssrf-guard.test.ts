// The SSRF guard of the webhook API and queue with INBOXD_WEBHOOK_ALLOW_PRIVATE off: creation
// refuses private literals and names that resolve to private addresses, and every delivery
// resolves the host again through the configured DNS server and refuses before connecting.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { webhookQueue } from "./helpers";

// Every kind of address the issue names, as a DNS answer would give it.
const forbiddenAnswers: [string, "A" | "AAAA"][] = [
  ["10.1.2.3", "A"], // private
  ["172.20.0.1", "A"], // private
  ["192.168.0.10", "A"], // private
  ["127.0.0.1", "A"], // loopback
  ["169.254.169.254", "A"], // link-local: cloud metadata
  ["100.64.0.1", "A"], // CGNAT 100.64/10
  ["0.0.0.0", "A"], // 0.0.0.0/8
  ["0.1.2.3", "A"], // 0.0.0.0/8
  ["224.0.0.251", "A"], // multicast
  ["255.255.255.255", "A"], // broadcast
  ["::1", "AAAA"], // IPv6 loopback
  ["fd00::1", "AAAA"], // ULA
  ["fe80::1", "AAAA"], // link-local
  ["ff02::1", "AAAA"], // multicast
  ["::ffff:127.0.0.1", "AAAA"], // IPv4-mapped loopback
  ["::ffff:a9fe:a9fe", "AAAA"], // IPv4-mapped metadata
  ["64:ff9b::a00:1", "AAAA"], // NAT64 of 10.0.0.1
  ["64:ff9b::7f00:1", "AAAA"], // NAT64 of 127.0.0.1
];

// Literal hosts in the URL, in every spelling a URL parser turns into a forbidden address.
const forbiddenLiterals = [
  "127.0.0.1",
  "10.0.0.1",
  "169.254.169.254",
  "100.64.0.1",
  "0.0.0.0",
  "224.0.0.1",
  "2130706433", // decimal 127.0.0.1
  "0177.0.0.1", // octal
  "0x7f.0.0.1", // hex
  "0x7f000001", // one hex number
  "127.1", // short form
  "[::1]",
  "[fd00::1]",
  "[fe80::1]",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[64:ff9b::a9fe:a9fe]",
  "localhost",
  "api.localhost",
];

let dns: DnsServer;
let server: TestServer;
let receiver: WebhookReceiver;
let org: { organizationId: string; apiKey: string };

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = startWebhookReceiver();
  server = await startTestServer({ env: { INBOXD_WEBHOOK_ALLOW_PRIVATE: "0", INBOXD_DNS_SERVERS: dns.address } });
  org = await seedOrganization(server.app);
});
afterAll(async () => {
  await server.cleanup();
  await receiver.close();
  await dns.close();
});

const create = (url: string) => server.api.post("/v1/webhooks", { url, events: ["message.received"] }, org.apiKey);

describe("at creation", () => {
  test.each(forbiddenLiterals)("refuses https://%s/ with 422", async (host) => {
    const reply = await create(`https://${host}:${receiver.port}/hook`);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toContain("url");
  });

  test("refuses http, and accepts https to a public address or to a name that does not resolve yet", async () => {
    expect((await create("http://hooks.example.test/")).body.error).toBe("url must use https");
    expect((await create("https://8.8.8.8/hook")).status).toBe(201);
    expect((await create("https://not-yet.example.test/hook")).status).toBe(201);
  });

  test("refuses what the URL parser would read as another URL than the one given: no host after the scheme, spaces, line breaks", async () => {
    for (const url of ["https:///hooks.example.test/x", "https:\\\\hooks.example.test/x", "https:hooks.example.test/x", " https://hooks.example.test/x", "https://hooks.example.test/\r\nX: y", "https://hooks.example.test/a\tb", "hooks.example.test/x", "https://hooks.example.test/a\u0085b", "https://hooks.example.test/a\u2028b"]) {
      const reply = await create(url);
      expect({ url, status: reply.status, error: reply.body.error }).toEqual({ url, status: 422, error: "url must be an absolute URL, without spaces or control characters" });
    }
    expect((await create("https://[2606:4700::1111]/hook")).status).toBe(201);
  });

  test("refuses a name whose addresses include a private one, even beside a public one", async () => {
    dns.set("internal.example.test", "A", ["10.0.0.7"]);
    dns.set("mixed.example.test", "A", ["93.184.216.34", "127.0.0.1"]);
    dns.set("v6.example.test", "AAAA", ["fd12::7"]);
    for (const name of ["internal", "mixed", "v6"]) {
      const reply = await create(`https://${name}.example.test/hook`);
      expect(reply.status).toBe(422);
      expect(reply.body.error).toContain("resolves to a private");
    }
  });

  test("a private answer of one address family is refused when the other family's look-up fails (the name's own server can fail it at will)", async () => {
    // A timeout would take the resolver's tries; a SERVFAIL is the same failure at once.
    dns.set("half.example.test", "A", ["127.0.0.1"]);
    dns.failNext("half.example.test", "SERVFAIL", 10, "AAAA");
    const reply = await create("https://half.example.test/hook");
    expect({ status: reply.status, error: reply.body.error }).toEqual({ status: 422, error: "url host half.example.test resolves to a private, loopback, link-local or reserved address (127.0.0.1)" });
  });
});

describe("at every delivery", () => {
  test("a host that resolves to any private, loopback, link-local or reserved address is refused before connecting", async () => {
    const webhooks: { id: string; answer: string }[] = [];
    for (const [index, [answer, type]] of forbiddenAnswers.entries()) {
      const name = `rebind-${index}.example.test`;
      dns.set(name, "A", ["93.184.216.34"]);
      const created = await create(`https://${name}:${receiver.port}/rebind`);
      expect(created.status).toBe(201);
      // DNS rebinding: the answer changes after the check at creation.
      dns.remove(name);
      dns.set(name, type, [answer]);
      await server.api.post(`/v1/webhooks/${created.body.id}/test`, undefined, org.apiKey);
      webhooks.push({ id: created.body.id, answer });
    }
    await webhookQueue(server).runDueNow();

    expect(receiver.requests).toHaveLength(0);
    for (const { id, answer } of webhooks) {
      const [attempt] = (await server.api.get(`/v1/webhooks/${id}/attempts`, org.apiKey)).body;
      expect({ answer, success: attempt.success, statusCode: attempt.statusCode }).toEqual({ answer, success: false, statusCode: undefined });
      expect(attempt.error).toStartWith("refused: ");
      expect(attempt.error).toContain("private, loopback, link-local or reserved");
    }
  });
});
