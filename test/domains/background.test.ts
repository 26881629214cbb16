import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { publishRecords, recordOf } from "./zone";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let dns: DnsServer;
let server: TestServer;
let apiKey: string;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.set("mx.inboxd.test", "A", ["192.0.2.10"]);
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address } });
  apiKey = (await seedOrganization(server.app)).apiKey;
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
});

const row = async (name: string) => (await server.app.store.domains.findByName(name))!;

/** The background part polls every second of real time; this waits for what it did. */
async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value)}`);
    await Bun.sleep(50);
  }
}

describe("background verification", () => {
  test("a new domain is looked up every few minutes: once its records are published it turns verified on its own", async () => {
    const created = await server.api.post("/v1/domains", { name: "soon.example" }, apiKey);
    expect((await row("soon.example")).nextCheckAt - Date.parse(created.body.createdAt)).toBe(5 * MINUTE);
    publishRecords(dns, created.body.records);
    server.clock.advance(5 * MINUTE);
    const verified = await waitFor(() => row("soon.example"), (domain) => domain.status === "verified");
    expect(verified).toMatchObject({ receiving: true, sending: true });
    // Verified domains are looked at hourly.
    expect(verified.nextCheckAt - verified.checkedAt!).toBe(HOUR);
    expect((await server.api.get("/v1/domains/soon.example", apiKey)).body.verified).toBe(true);
  });

  test("a verified domain whose records vanish turns failed at its next hourly check, with the reason", async () => {
    const domain = (await server.api.get("/v1/domains/soon.example", apiKey)).body;
    dns.remove(recordOf(domain.records, "MX").name, "MX");
    const checkedAt = (await row("soon.example")).checkedAt;
    server.clock.advance(HOUR);
    const failed = await waitFor(() => row("soon.example"), (current) => current.checkedAt !== checkedAt);
    expect(failed).toMatchObject({ status: "failed", receiving: false, verifiedAt: null });
    const shown = (await server.api.get("/v1/domains/soon.example", apiKey)).body;
    expect(recordOf(shown.records, "MX")).toMatchObject({ status: "failed", reason: "no longer published: no MX record at soon.example" });
    expect(shown).not.toHaveProperty("verifiedAt");
  });

  test("after its first day, a domain still pending is looked up hourly", async () => {
    await server.api.post("/v1/domains", { name: "late.example" }, apiKey);
    server.clock.advance(25 * HOUR);
    const checked = await waitFor(() => row("late.example"), (domain) => domain.checkedAt !== null);
    expect(checked.status).toBe("pending");
    expect(checked.recordChecks["MX late.example"]).toEqual({ status: "pending", reason: "no MX record at late.example" });
    expect(checked.nextCheckAt - checked.checkedAt!).toBe(HOUR);
  });
});
