import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkHostname } from "../../src/doctor/checks";
import { selfSignedCert } from "../../src/smtp/self-signed";
import { onPostgres, runInboxd, seedOrganization, sqliteOnly, startTestServer, tempDir, type TestServer } from "../harness";
import { publishRecords } from "../domains/zone";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startNtpServer, type NtpServer } from "../peers/ntp-server";
import { freePort } from "../peers/ports";
import { startSmtpSink, type SmtpSink } from "../peers/smtp-sink";

// The server's public address: on loopback, but nothing connects to it; only DNS names it.
const PUBLIC_IP = "127.0.0.2";
const HOSTNAME = "mx.inboxd.test";
const CUSTOM_DOMAIN = "custom.example";

let dns: DnsServer;
let server: TestServer;
let sink: SmtpSink;
let ntp: NtpServer;
let certPath: string;
let zone: string;

beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink();
  ntp = await startNtpServer();
  const env = { INBOXD_DNS_SERVERS: dns.address, INBOXD_PUBLIC_IPS: PUBLIC_IP };
  server = await startTestServer({ env });
  // The records `inboxd dns` prints for the service domain, published as an operator would.
  zone = (await runCli(["dns"])).stdout;
  dns.setZoneFile(zone);
  dns.set(`2.0.0.127.in-addr.arpa`, "PTR", [HOSTNAME]);
  dns.set("probe.test", "MX", [{ exchange: "mx.probe.test", priority: 10 }]);
  dns.set("mx.probe.test", "A", ["127.0.0.1"]);
  const org = await seedOrganization(server.app, "Acme");
  expect((await server.api.post("/v1/inboxes", { email: "ops@inboxd.test" }, org.apiKey)).status).toBe(201);
  const created = await server.api.post("/v1/domains", { name: CUSTOM_DOMAIN }, org.apiKey);
  publishRecords(dns, created.body.records);
  expect((await server.api.post(`/v1/domains/${created.body.id}/verify`, undefined, org.apiKey)).body.status).toBe("verified");
  const tlsDir = tempDir("doctor-tls");
  certPath = join(tlsDir, "cert.pem");
  writeFileSync(certPath, selfSignedCert(HOSTNAME).cert);
  chmodSync(server.dataDir, 0o700);
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
  await sink.close();
  ntp.close();
});

/** The CLI as a child process beside the running server, as an operator runs it. */
async function runCli(args: string[], overrides: Record<string, string> = {}) {
  const env = {
    ...process.env,
    INBOXD_DATA_DIR: server.dataDir,
    ...(server.app.config.databaseUrl ? { INBOXD_DATABASE_URL: server.app.config.databaseUrl } : {}),
    INBOXD_MAIL_DOMAIN: "inboxd.test",
    INBOXD_HOSTNAME: HOSTNAME,
    INBOXD_PUBLIC_IPS: PUBLIC_IP,
    INBOXD_DNS_SERVERS: dns.address,
    INBOXD_DOCTOR_PROBE_DOMAIN: "probe.test",
    INBOXD_OUTBOUND_PORT: String(sink.port),
    INBOXD_DOCTOR_NTP_SERVER: ntp.address,
    INBOXD_POSTMASTER_INBOX: "ops@inboxd.test",
    ...(certPath ? { INBOXD_TLS_CERT: certPath } : {}),
    INBOXD_LOG_LEVEL: "silent",
    ...overrides,
  };
  return runInboxd(args, env as Record<string, string>);
}

const failures = (stdout: string) => stdout.split("\n").filter((line) => line.startsWith("FAIL"));

describe("inboxd doctor", () => {
  test("a good zone: every check passes, one line each, exit 0", async () => {
    const { stdout, exitCode } = await runCli(["doctor"]);
    expect(failures(stdout)).toEqual([]);
    expect(exitCode).toBe(0);
    for (const line of [
      `ok    host name: ${HOSTNAME} is a fully qualified domain name`,
      `ok    address records: ${HOSTNAME} resolves to ${PUBLIC_IP}`,
      `ok    reverse DNS of ${PUBLIC_IP}: PTR ${HOSTNAME}, which resolves back to ${PUBLIC_IP}`,
      "ok    inboxd.test: MX inboxd.test",
      "ok    inboxd.test: TXT _dmarc.inboxd.test",
      `ok    ${CUSTOM_DOMAIN}: MX ${CUSTOM_DOMAIN}`,
      `ok    ${CUSTOM_DOMAIN}: TXT _dmarc.${CUSTOM_DOMAIN}`,
      `ok    ${HOSTNAME}: SPF`,
      "ok    postmaster: mail to postmaster and the reserved addresses goes to ops@inboxd.test",
      `ok    outbound port ${sink.port}: mx.probe.test:${sink.port} greeted: 220`,
      `ok    TLS certificate: valid for ${HOSTNAME}`,
      `ok    data dir ${server.dataDir}: mode 700`,
      "ok    free disk",
      "ok    clock: within",
    ]) {
      expect(stdout).toContain(line);
    }
    // Both DKIM keys of each domain (RSA and Ed25519) are looked up.
    expect(stdout.match(/^ok {4}(inboxd\.test|custom\.example): TXT \S+\._domainkey\./gm)).toHaveLength(4);
  });

  test("a broken zone: each fault is one FAIL line with what to do, exit 1", async () => {
    const dkimName = zone.match(/^(\S+\._domainkey\.inboxd\.test)\./m)![1];
    const ptrName = "2.0.0.127.in-addr.arpa";
    dns.remove(ptrName);
    dns.remove("_dmarc.custom.example");
    dns.set(dkimName, "TXT", ["v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong"]);
    ntp.offsetMs = 300_000;
    const otherCert = join(tempDir("doctor-tls"), "other.pem");
    writeFileSync(otherCert, selfSignedCert("other.example").cert);
    chmodSync(server.dataDir, 0o755);
    try {
      const { stdout, exitCode } = await runCli(["doctor"], { INBOXD_TLS_CERT: otherCert, INBOXD_OUTBOUND_PORT: String(await freePort()), INBOXD_POSTMASTER_INBOX: "nobody@inboxd.test" });
      expect(exitCode).toBe(1);
      const failed = failures(stdout).map((line) => line.replace(/:.*/, ""));
      expect(failed).toEqual([
        `FAIL  reverse DNS of ${PUBLIC_IP}`,
        `FAIL  inboxd.test`,
        `FAIL  ${CUSTOM_DOMAIN}`,
        "FAIL  postmaster",
        expect.stringMatching(/^FAIL {2}outbound port \d+$/),
        "FAIL  TLS certificate",
        `FAIL  data dir ${server.dataDir}`,
        "FAIL  clock",
      ]);
      expect(stdout).toContain(`-> set the reverse DNS (PTR) of ${PUBLIC_IP} to ${HOSTNAME}`);
      expect(stdout).toContain(`FAIL  inboxd.test: TXT ${dkimName}: the DKIM record at ${dkimName}`);
      expect(stdout).toContain(`FAIL  ${CUSTOM_DOMAIN}: TXT _dmarc.${CUSTOM_DOMAIN}: no DMARC record`);
      expect(stdout).toContain(`-> publish _dmarc.${CUSTOM_DOMAIN} TXT "v=DMARC1`);
      expect(stdout).toContain("-> ask the provider to lift its block on outbound port");
      expect(stdout).toContain(`is not valid for ${HOSTNAME}`);
      expect(stdout).toContain(`-> chmod 700 ${server.dataDir}`);
      expect(stdout).toMatch(/FAIL {2}clock: off by (29\d{4}|30\d{4}) ms/);
      expect(stdout).toContain("FAIL  postmaster: INBOXD_POSTMASTER_INBOX is nobody@inboxd.test, but no inbox has that address: mail to postmaster is deferred with 451");
      expect(stdout).toContain("-> set INBOXD_POSTMASTER_INBOX to the address of an inbox that exists; or unset it, restart, create the inbox nobody@inboxd.test, set it again and restart");
      expect(stdout).toMatch(/^8 of \d+ checks failed$/m);
    } finally {
      chmodSync(server.dataDir, 0o700);
      ntp.offsetMs = 0;
      dns.set(ptrName, "PTR", [HOSTNAME]);
    }
  });

  test("the data dir's self-signed certificate: checked for the host name; one for another host fails, and a start makes it again", async () => {
    const withoutOperatorCertificate = { INBOXD_TLS_CERT: "" };
    expect((await runCli(["doctor"], withoutOperatorCertificate)).stdout).toContain(`ok    TLS certificate: self-signed (${join(server.dataDir, "smtp-tls.crt")})`);
    const renamed = await runCli(["doctor"], { ...withoutOperatorCertificate, INBOXD_HOSTNAME: "mail.inboxd.test" });
    expect(renamed.stdout).toContain(`FAIL  TLS certificate: ${join(server.dataDir, "smtp-tls.crt")} names DNS:${HOSTNAME}, not mail.inboxd.test`);
    expect(renamed.stdout).toContain("-> restart inboxd: it makes its self-signed certificate again");
    const beforeFirstStart = tempDir("doctor-before-start");
    expect((await runCli(["doctor"], { ...withoutOperatorCertificate, INBOXD_DATA_DIR: beforeFirstStart })).stdout).toContain(`ok    TLS certificate: none yet: inboxd makes a self-signed one (${join(beforeFirstStart, "smtp-tls.crt")}) at its first start`);
  });

  test.skipIf(onPostgres)(sqliteOnly("a database it cannot read is one FAIL line, and the other checks still run", "the data dir's database file (on PostgreSQL doctor reads the server's)"), async () => {
    const dataDir = tempDir("doctor-junk");
    chmodSync(dataDir, 0o700);
    writeFileSync(join(dataDir, "inboxd.db"), "not a database, ".repeat(2000));
    const { stdout, exitCode } = await runCli(["doctor"], { INBOXD_DATA_DIR: dataDir });
    expect(exitCode).toBe(1);
    expect(stdout).toContain(`FAIL  database: cannot read ${join(dataDir, "inboxd.db")} (file is not a database)`);
    expect(stdout).toContain(`ok    host name: ${HOSTNAME} is a fully qualified domain name`);
    expect(stdout).toContain("ok    clock: within");
  });

  test("the host name must be fully qualified", () => {
    expect(checkHostname("mx.example.com").ok).toBe(true);
    for (const name of ["localhost", "mx", "-x-.example", "bad domain.example", "10.0.0.1", ""]) {
      expect(checkHostname(name)).toMatchObject({ ok: false, fix: expect.stringContaining("INBOXD_HOSTNAME") });
    }
  });
});
