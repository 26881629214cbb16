// Outbound MTA-STS (RFC 8461): recipient domains publish `_mta-sts` and serve their policy over
// HTTPS on loopback; under `enforce` mail goes only over TLS with a valid certificate to an MX the
// policy names, else it is deferred and finally bounced with the reason; `testing` changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../harness";
import { selfSignedCert } from "../peers/tls";
import { startOutboundWorld, type OutboundWorld } from "./world";

const sinkCertificate = selfSignedCert("mx.strict.test");
const policies: Record<string, string> = {
  "strict.test": "version: STSv1\r\nmode: enforce\r\nmx: mx.strict.test\r\nmax_age: 86400\r\n",
  "wrong.test": "version: STSv1\nmode: enforce\nmx: *.wrong.test\nmax_age: 86400\n",
  "nomatch.test": "version: STSv1\r\nmode: enforce\r\nmx: mx.elsewhere.test\r\nmax_age: 86400\r\n",
  "testing.test": "version: STSv1\r\nmode: testing\r\nmx: mx.testing.test\r\nmax_age: 86400\r\n",
};
/** A domain whose policy server sends a body that never ends (it stops at 256 MiB: a test must not fill the machine). */
const endless = "endless.test";
let endlessBytesSent = 0;
const endlessPolicy = () => {
  const chunk = Buffer.from("mx: mx.endless.test\r\n".repeat(3000));
  return new ReadableStream({
    pull(controller) {
      if (endlessBytesSent > 256 * 1024 * 1024) return controller.close();
      endlessBytesSent += chunk.length;
      controller.enqueue(chunk);
    },
  });
};
const policyHosts = [...Object.keys(policies), endless].map((domain) => ({ domain, ...selfSignedCert(`mta-sts.${domain}`) }));
const policyRequests: string[] = [];

let w: OutboundWorld;
let policyServer: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  policyServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: policyHosts.map(({ domain, cert, key }) => ({ serverName: `mta-sts.${domain}`, cert, key })),
    fetch(request) {
      const host = new URL(request.url).hostname;
      policyRequests.push(host);
      if (host === `mta-sts.${endless}`) return new Response(endlessPolicy(), { headers: { "content-type": "text/plain" } });
      const policy = policies[host.replace(/^mta-sts\./, "")];
      return policy ? new Response(policy, { headers: { "content-type": "text/plain" } }) : new Response("no", { status: 404 });
    },
  });
  const caFile = join(tempDir("outbound-ca"), "ca.pem");
  writeFileSync(caFile, [sinkCertificate.cert, ...policyHosts.map((host) => host.cert)].join(""));
  w = await startOutboundWorld({
    sink: { certificate: sinkCertificate },
    env: { INBOXD_OUTBOUND_CA_FILE: caFile, INBOXD_MTA_STS_POLICY_PORT: String(policyServer.port) },
  });
  for (const domain of [...Object.keys(policies), endless]) {
    w.mx(domain);
    w.dns.set(`_mta-sts.${domain}`, "TXT", ["v=STSv1; id=20261125"]);
    w.dns.set(`mta-sts.${domain}`, "A", ["127.0.0.1"]);
  }
  w.mx("plain.test");
});
afterAll(async () => {
  await w.close();
  await policyServer.stop(true);
});

async function sendAndRun(to: string) {
  const sent = await w.send({ to: [to] });
  await w.queue.runDueNow();
  return w.message(sent.id);
}
const delivered = (address: string) => w.sink.messages.filter((message) => message.rcptTo.includes(address));

describe("MTA-STS enforce", () => {
  test("an MX the policy names, with a certificate valid for its name: delivered over TLS; the policy is cached for its max_age", async () => {
    const message = await sendAndRun("ann@strict.test");
    expect(message.deliveries[0]).toMatchObject({ status: "delivered" });
    expect(delivered("ann@strict.test")[0]!.secure).toBe(true);
    const cached = (await w.server.app.store.mtaStsPolicies.find("strict.test"))!;
    expect(cached).toMatchObject({ policyId: "20261125", mode: "enforce", mxPatterns: ["mx.strict.test"], maxAge: 86400 });
    expect(cached.expiresAt - cached.fetchedAt).toBe(86_400_000);
  });

  test("an MX whose certificate is for another name: not delivered, deferred with the reason, then bounced", async () => {
    const message = await sendAndRun("bob@wrong.test");
    expect(delivered("bob@wrong.test")).toHaveLength(0);
    expect(message.deliveries[0]).toMatchObject({ status: "queued", lastResponse: expect.stringContaining("MTA-STS (enforce) requires TLS with a certificate valid for mx.wrong.test") });
    w.server.clock.advance(67_000);
    await w.queue.runDueNow();
    w.server.clock.advance(133_000);
    await w.queue.runDueNow();
    const bounced = await w.message(message.id);
    expect(bounced.status).toBe("bounced");
    expect(bounced.deliveries[0]).toMatchObject({ status: "bounced", lastResponse: expect.stringMatching(/retries exhausted after 3 tries; last: .*MTA-STS \(enforce\)/) });
    expect(delivered("bob@wrong.test")).toHaveLength(0);
  });

  test("no MX named by the policy: deferred, saying so, and never connected to", async () => {
    const before = w.rcptLog.length;
    const message = await sendAndRun("cy@nomatch.test");
    expect(message.deliveries[0]).toMatchObject({ status: "queued", lastResponse: expect.stringContaining("the MTA-STS policy of nomatch.test (mode enforce) names none of its MX hosts") });
    expect(w.rcptLog.length).toBe(before);
  });
});

describe("a policy that cannot be had", () => {
  test("a body that never ends: read up to 64 KiB, no policy, delivered as without one", async () => {
    const message = await sendAndRun(`fay@${endless}`);
    expect(message.deliveries[0]).toMatchObject({ status: "delivered" });
    expect(await w.server.app.store.mtaStsPolicies.find(endless)).toBeUndefined();
    // What the stream pushed ahead of the reader, not what was read: far less than the 256 MiB on offer.
    expect(endlessBytesSent).toBeLessThan(16 * 1024 * 1024);
  });
});

describe("MTA-STS testing, and no policy", () => {
  test("testing: the same wrong certificate is accepted, as without a policy", async () => {
    expect((await sendAndRun("dee@testing.test")).deliveries[0]).toMatchObject({ status: "delivered" });
    expect((await sendAndRun("eve@plain.test")).deliveries[0]).toMatchObject({ status: "delivered" });
    expect(await w.server.app.store.mtaStsPolicies.find("plain.test")).toBeUndefined();
    expect(policyRequests).not.toContain("mta-sts.plain.test");
  });
});
