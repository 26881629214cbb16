// Certificates from a real ACME server (pebble) on loopback: first issuance over HTTP-01 on our own
// port, HTTPS and SMTP STARTTLS serving them, renewal at two thirds of the lifetime seen by new
// connections without a restart, and a failing challenge that backs off while the old certificate serves.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect, type PeerCertificate } from "node:tls";
import { checkAcmeCertificate } from "../../src/doctor/checks";
import { eventually, queryRow, startTestServer, tempDir, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { pebbleMissing, startPebble, type Pebble } from "../peers/pebble";
import { freePort } from "../peers/ports";
import { rawRequest, withoutUsableHost } from "../http/raw-request";

const HOST = "mx.certs.test";
const API_HOST = "api.certs.test";
const MTA_STS_HOST = "mta-sts.certs.test";
const VALIDITY_SECONDS = 3600;
const MINUTE = 60_000;

if (pebbleMissing) test.skip(`ACME against pebble: skipped, ${pebbleMissing}`, () => {});

describe.skipIf(Boolean(pebbleMissing))("ACME certificates (pebble)", () => {
  let dns: DnsServer;
  let pebble: Pebble;
  let server: TestServer;
  let root: string;
  let httpsPort: number;
  const warnings: { event: string; fields?: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    dns = await startDnsServer();
    for (const name of [HOST, API_HOST, MTA_STS_HOST]) dns.set(name, "A", ["127.0.0.1"]);
    const challengePort = await freePort();
    pebble = await startPebble({ dir: tempDir("pebble"), dnsServer: dns.address, httpPort: challengePort, validitySeconds: VALIDITY_SECONDS });
    root = await pebble.issuingRoot();
    server = await startTestServer({
      env: {
        INBOXD_HOSTNAME: HOST,
        INBOXD_MAIL_DOMAIN: "certs.test",
        INBOXD_API_HOSTNAME: API_HOST,
        INBOXD_DNS_SERVERS: dns.address,
        INBOXD_ACME_EMAIL: "ops@certs.test",
        INBOXD_ACME_DIRECTORY: pebble.directoryUrl,
        INBOXD_ACME_CA_FILE: pebble.caFile,
        INBOXD_ACME_HTTP_PORT: String(challengePort),
        INBOXD_HTTPS_PORT: "0",
      },
    });
    httpsPort = server.running.parts.find((part) => part.name === "https")!.address!.port;
    const log = server.app.log;
    server.app.log = { ...log, warn: (event, fields) => (warnings.push({ event, fields }), log.warn(event, fields)) };
  }, 30_000);

  afterAll(async () => {
    await server?.cleanup();
    await pebble?.stop();
    await dns?.close();
  }, 30_000);

  const issued = (name: string) => server.app.store.certificates.list().then((rows) => rows.find((row) => row.name === name));

  test("obtains a certificate for each name, kept in the database with its key sealed", async () => {
    for (const name of [HOST, API_HOST, MTA_STS_HOST]) await eventually(`a certificate for ${name}`, () => issued(name), (row) => Boolean(row?.certificatePem), 30_000);
    const row = (await issued(HOST))!;
    expect(new X509Certificate(row.certificatePem!).checkHost(HOST)).toBe(HOST);
    expect(row.notAfter! - row.notBefore!).toBeLessThanOrEqual(VALIDITY_SECONDS * 1000 + 1000);
    // Renewal falls due at two thirds of the lifetime.
    expect(row.nextAttemptAt).toBe(row.notBefore! + Math.floor(((row.notAfter! - row.notBefore!) * 2) / 3));
    const raw = (await queryRow<{ key: string }>(server.app, "SELECT private_key_pem AS key FROM tls_certificates LIMIT 1"))!;
    expect(raw.key).toStartWith("enc:v1:");
    expect(raw.key).not.toContain("PRIVATE KEY");
  }, 40_000);

  test("HTTPS serves each name's certificate, trusted through the CA's root, with HSTS", async () => {
    for (const name of [HOST, API_HOST]) {
      const peer = await tlsPeer(httpsPort, name, root);
      expect(peer.authorized).toBe(true);
      expect(peer.certificate.fingerprint256).toBe(new X509Certificate((await issued(name))!.certificatePem!).fingerprint256);
    }
    const health = await fetch(`https://127.0.0.1:${httpsPort}/health`, { headers: { host: API_HOST }, tls: { rejectUnauthorized: false } });
    expect(health.status).toBe(200);
    expect(health.headers.get("strict-transport-security")).toBe("max-age=31536000");
  });

  test("serves the MTA-STS policy at mta-sts.<domain> over HTTPS (RFC 8461 §3.3), and nothing for other hosts", async () => {
    const peer = await tlsPeer(httpsPort, MTA_STS_HOST, root);
    expect(peer.authorized).toBe(true);
    const policy = await fetch(`https://127.0.0.1:${httpsPort}/.well-known/mta-sts.txt`, { headers: { host: MTA_STS_HOST }, tls: { rejectUnauthorized: false } });
    expect(policy.status).toBe(200);
    expect(policy.headers.get("content-type")).toStartWith("text/plain");
    expect(await policy.text()).toBe(`version: STSv1\r\nmode: testing\r\nmx: ${HOST}\r\nmax_age: 604800\r\n`);
    // As every answer of the server's HTTP listeners (docs/operations.md).
    expect(policy.headers.get("x-request-id")).toMatch(/^req_/);
    const elsewhere = await fetch(`https://127.0.0.1:${httpsPort}/.well-known/mta-sts.txt`, { headers: { host: "mta-sts.other.test" }, tls: { rejectUnauthorized: false } });
    expect(elsewhere.status).toBe(404);
  });

  test("SMTP STARTTLS serves the mail host's certificate", async () => {
    const peer = await startTlsPeer(server.smtpPort, HOST, root);
    expect(peer.authorized).toBe(true);
    expect(peer.certificate.fingerprint256).toBe(new X509Certificate((await issued(HOST))!.certificatePem!).fingerprint256);
  });

  test("renews at two thirds of the lifetime; new HTTPS and STARTTLS connections get the new certificate without a restart", async () => {
    const before = (await issued(HOST))!;
    server.clock.advance(before.nextAttemptAt - server.clock.now() + 1000);
    const after = await eventually("the renewed certificate", () => issued(HOST), (row) => row!.certificatePem !== before.certificatePem, 30_000);
    const fingerprint = new X509Certificate(after!.certificatePem!).fingerprint256;
    await eventually("HTTPS serving it", () => tlsPeerOrReset(httpsPort, HOST, root), (peer) => peer?.certificate.fingerprint256 === fingerprint);
    await eventually("STARTTLS serving it", () => startTlsPeer(server.smtpPort, HOST, root), (peer) => peer.certificate.fingerprint256 === fingerprint);
    expect((await tlsPeer(httpsPort, HOST, root)).authorized).toBe(true);
  }, 40_000);

  test("a failing challenge is logged and retried after a backoff while the old certificate keeps serving", async () => {
    // The CA now finds the API host elsewhere: its HTTP-01 validation fails.
    dns.set(API_HOST, "A", ["127.0.0.2"]);
    server.clock.advance(Math.max(0, (await issued(API_HOST))!.nextAttemptAt - server.clock.now()) + 1000);
    // The renewal test's clock move made this host due as well, and a renewal of it begun before
    // the DNS change may still end well: the certificate kept is the one the failed try found.
    const failed = await eventually("the failure recorded", () => issued(API_HOST), (row) => row!.failures === 1, 30_000);
    expect(failed!.lastError).toBeTruthy();
    expect(failed!.nextAttemptAt - server.clock.now()).toBeGreaterThan(9 * MINUTE);
    expect(failed!.certificatePem).toBeTruthy();
    const warning = warnings.find((line) => line.event === "certificate not obtained" && line.fields?.name === API_HOST)!;
    expect(warning.fields).toMatchObject({ failures: 1, serving: expect.stringMatching(/^the previous certificate, valid until /) });
    expect((await tlsPeer(httpsPort, API_HOST, root)).certificate.fingerprint256).toBe(new X509Certificate(failed!.certificatePem!).fingerprint256);
    expect(checkAcmeCertificate(failed!, server.clock.now())).toMatchObject({ ok: false, detail: expect.stringMatching(/^renewal failed 1 times \(/) });

    dns.set(API_HOST, "A", ["127.0.0.1"]);
    server.clock.advance(failed!.nextAttemptAt - server.clock.now() + 1000);
    const renewed = await eventually("the retry succeeding", () => issued(API_HOST), (row) => row!.failures === 0 && row!.certificatePem !== failed!.certificatePem, 30_000);
    const fingerprint = new X509Certificate(renewed!.certificatePem!).fingerprint256;
    await eventually("HTTPS serving it", () => tlsPeerOrReset(httpsPort, API_HOST, root), (peer) => peer?.certificate.fingerprint256 === fingerprint);
    // The server's clock ran ahead of the CA's: the certificate's own validity is judged by the real time.
    expect(checkAcmeCertificate(renewed!, Date.now())).toMatchObject({ ok: true, detail: expect.stringContaining("issued by CN=Pebble Intermediate CA") });
  }, 60_000);

  test("a name that no longer resolves fails before the CA is asked", async () => {
    const before = (await issued(MTA_STS_HOST))!;
    dns.remove(MTA_STS_HOST);
    server.clock.advance(Math.max(0, before.nextAttemptAt - server.clock.now()) + 1000);
    const failed = await eventually("the failure recorded", () => issued(MTA_STS_HOST), (row) => row!.failures === 1, 30_000);
    expect(failed!.lastError).toContain(MTA_STS_HOST);
    expect(failed!.certificatePem).toBe(before.certificatePem);
    dns.set(MTA_STS_HOST, "A", ["127.0.0.1"]);
  }, 40_000);

  test("the ACME HTTP port redirects everything but challenges to HTTPS", async () => {
    const port = server.running.parts.find((part) => part.name === "acme-http")!.address!.port;
    const response = await fetch(`http://127.0.0.1:${port}/v1/inboxes?page=2`, { headers: { host: API_HOST }, redirect: "manual" });
    expect(response.status).toBe(301);
    expect(response.headers.get("location")).toBe(`https://${API_HOST}:${httpsPort}/v1/inboxes?page=2`);
    const unknown = await fetch(`http://127.0.0.1:${port}/.well-known/acme-challenge/unknown-token`);
    expect(unknown.status).toBe(404);
  });

  test("the ACME HTTP port and HTTPS answer a request without a usable Host 400 {error} (never Bun's error page), and HTTPS every error as the API does", async () => {
    const acmePort = server.running.parts.find((part) => part.name === "acme-http")!.address!.port;
    for (const request of withoutUsableHost) {
      for (const [port, tls] of [[acmePort, false], [httpsPort, true]] as const) {
        const answer = await rawRequest(port, request, { tls });
        expect({ request, port, status: answer.status, body: answer.body }).toEqual({ request, port, status: 400, body: JSON.stringify({ error: "The Host header is missing or malformed" }) });
      }
    }
    const https = (path: string, init: RequestInit = {}) => fetch(`https://127.0.0.1:${httpsPort}${path}`, { ...init, headers: { host: API_HOST }, tls: { rejectUnauthorized: false } });
    for (const [path, method, status, error] of [
      ["/v1/nothing/here", "GET", 404, "Not found"],
      ["/health", "DELETE", 404, "Not found"],
      ["/.well-known/mta-sts.txt", "GET", 404, "Not found"],
      ["/v1/inboxes%00", "GET", 400, "The URL must not hold NUL (%00)"],
    ] as const) {
      const answer = await https(path, { method });
      expect({ path, method, status: answer.status, body: await answer.json() }).toEqual({ path, method, status, body: { error } });
      expect(answer.headers.get("strict-transport-security")).toBe("max-age=31536000");
    }
  });
});

type TlsPeer = { authorized: boolean; certificate: PeerCertificate };

function tlsPeer(port: number, servername: string, ca: string): Promise<TlsPeer> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, servername, ca, rejectUnauthorized: false }, () => {
      resolve({ authorized: socket.authorized, certificate: socket.getPeerCertificate() });
      socket.end();
    });
    socket.on("error", reject);
  });
}

/**
 * As tlsPeer, but undefined for a connection reset: one that reaches the listener being replaced
 * by the one with the new certificate can be (docs/deployment.md), and the next try reaches the new one.
 */
const tlsPeerOrReset = (port: number, servername: string, ca: string): Promise<TlsPeer | undefined> =>
  tlsPeer(port, servername, ca).catch((error: { code?: string }) => (error.code === "ECONNRESET" ? undefined : Promise.reject(error)));

/** EHLO, STARTTLS, then the TLS handshake: the certificate an SMTP client sees. */
function startTlsPeer(port: number, servername: string, ca: string): Promise<TlsPeer> {
  return new Promise((resolve, reject) => {
    const plain = netConnect({ host: "127.0.0.1", port });
    let received = "";
    let step = 0;
    plain.on("error", reject);
    plain.on("data", (chunk) => {
      received += chunk.toString();
      const lines = received.split("\r\n");
      const last = lines.at(-2) ?? "";
      if (!/^\d{3} /.test(last)) return;
      received = "";
      if (step === 0) plain.write("EHLO client.test\r\n");
      else if (step === 1) plain.write("STARTTLS\r\n");
      else if (step === 2) {
        plain.removeAllListeners("data");
        const secure = tlsConnect({ socket: plain, servername, ca, rejectUnauthorized: false }, () => {
          resolve({ authorized: secure.authorized, certificate: secure.getPeerCertificate() });
          secure.end();
        });
        secure.on("error", reject);
      }
      step++;
    });
  });
}
