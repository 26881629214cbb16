// The certificate settings at their edges, and the renewal schedule: two thirds of the lifetime,
// backoff doubling from 10 minutes to a 12-hour cap.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as acme from "acme-client";
import { certificateRequest } from "../../src/certs/acme";
import { backoff, renewalTime } from "../../src/certs/renewal";
import { httpsPortOf } from "../../src/certs/names";
import { loadConfig } from "../../src/config";
import { checkBeforeStart } from "../../src/serve";
import { selfSignedCert } from "../../src/smtp/self-signed";
import { tempDir, testEnv } from "../harness";

const MINUTE = 60_000;
const config = (env: Record<string, string>) => loadConfig(testEnv(tempDir("certs-settings"), env));

describe("settings", () => {
  test("ACME is off unless INBOXD_ACME_EMAIL is set; then HTTPS defaults to 443 and the challenges to 80", () => {
    expect(config({}).acmeEmail).toBeUndefined();
    expect(httpsPortOf(config({}))).toBeUndefined();
    const on = config({ INBOXD_ACME_EMAIL: "ops@example.com" });
    expect([on.acmeEmail, httpsPortOf(on), on.acmeHttpPort, on.acmeDirectory]).toEqual(["ops@example.com", 443, 80, "https://acme-v02.api.letsencrypt.org/directory"]);
    expect(httpsPortOf(config({ INBOXD_HTTPS_PORT: "8443" }))).toBe(8443);
    expect(config({}).mtaStsMode).toBe("testing");
  });

  test.each([
    ["INBOXD_ACME_EMAIL", "not-an-address", "INBOXD_ACME_EMAIL: 'not-an-address' is not an email address"],
    ["INBOXD_ACME_DIRECTORY", "http://acme.example/directory", "INBOXD_ACME_DIRECTORY: 'http://acme.example/directory' is not an https:// URL"],
    ["INBOXD_HTTPS_PORT", "65536", "INBOXD_HTTPS_PORT: '65536' is not a port (0-65535)"],
    ["INBOXD_MTA_STS_MODE", "strict", "INBOXD_MTA_STS_MODE: 'strict' is not one of testing, enforce, none"],
    ["INBOXD_API_HOSTNAME", "api_example.com", "INBOXD_API_HOSTNAME: 'api_example.com' is not a domain name (letters, digits, hyphens and dots; an IP address is none)"],
  ])("%s=%s is refused", (name, value, message) => expect(() => config({ [name]: value })).toThrow(message));

  test("an unreadable CA file stops the start, naming the setting", async () => {
    await expect(checkBeforeStart(config({ INBOXD_ACME_CA_FILE: "/nonexistent/ca.pem" }))).rejects.toThrow("INBOXD_ACME_CA_FILE: cannot read /nonexistent/ca.pem");
    await expect(checkBeforeStart(config({ INBOXD_OUTBOUND_CA_FILE: "/nonexistent/ca.pem" }))).rejects.toThrow("INBOXD_OUTBOUND_CA_FILE: cannot read /nonexistent/ca.pem");
    // Readable, but no certificate: refused now rather than at the first delivery or ACME order.
    const notPem = join(tempDir("certs-settings"), "ca.pem");
    writeFileSync(notPem, "not a certificate\n");
    for (const name of ["INBOXD_ACME_CA_FILE", "INBOXD_OUTBOUND_CA_FILE"]) await expect(checkBeforeStart(config({ [name]: notPem }))).rejects.toThrow(`${name}: ${notPem} holds no PEM certificate`);
    const ca = join(tempDir("certs-settings"), "ca.pem");
    writeFileSync(ca, selfSignedCert("ca.test").cert);
    await checkBeforeStart(config({ INBOXD_OUTBOUND_CA_FILE: ca, INBOXD_ACME_CA_FILE: ca }));
    // The PostgreSQL server's CA (libpq's sslrootcert), read when the pool opened: an exit 1 naming no setting.
    const databaseUrl = (file: string) => `postgres://inboxd@db.example/inboxd?sslmode=verify-full&sslrootcert=${file}`;
    await expect(checkBeforeStart(config({ INBOXD_DATABASE_URL: databaseUrl("/nonexistent/ca.pem") }))).rejects.toThrow("INBOXD_DATABASE_URL: cannot read /nonexistent/ca.pem");
    await expect(checkBeforeStart(config({ INBOXD_DATABASE_URL: databaseUrl(notPem) }))).rejects.toThrow(`INBOXD_DATABASE_URL: ${notPem} holds no PEM certificate`);
    await checkBeforeStart(config({ INBOXD_DATABASE_URL: databaseUrl(ca) }));
  });

  test("two listeners on one port stop the start, naming both, before anything is opened", async () => {
    await expect(checkBeforeStart(config({ INBOXD_HTTP_PORT: "17764", INBOXD_SMTP_PORT: "17764" }))).rejects.toThrow("INBOXD_SMTP_PORT: port 17764 is INBOXD_HTTP_PORT's too: give each listener a port of its own");
    await expect(checkBeforeStart(config({ INBOXD_HTTP_PORT: "17765", INBOXD_METRICS_BIND: "127.0.0.1:17765" }))).rejects.toThrow("INBOXD_METRICS_BIND: port 17765 is INBOXD_HTTP_PORT's too");
    // Port 0 takes any free port: never shared.
    await checkBeforeStart(config({ INBOXD_HTTP_PORT: "0", INBOXD_SMTP_PORT: "0" }));
  });
});

describe("renewal schedule", () => {
  test("renewal at two thirds of the lifetime: day 60 of a 90-day certificate", () => {
    const day = 24 * 60 * MINUTE;
    expect(renewalTime(0, 90 * day)).toBe(60 * day);
  });

  test("backoff: 10 minutes, doubling, capped at 12 hours", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((failures) => backoff(failures) / MINUTE)).toEqual([10, 20, 40, 80, 160, 320, 640, 720]);
    expect(backoff(100)).toBe(720 * MINUTE);
  });
});

describe("the certificate request", () => {
  test("names the host in its subject alternative names, and as the common name only while it fits one (RFC 5280: 64 characters; Let's Encrypt refuses a longer one)", async () => {
    const key = await acme.crypto.createPrivateRsaKey(2048);
    const short = `mta-sts.${"a".repeat(48)}.example`;
    const long = `mta-sts.${"a".repeat(49)}.example`;
    expect([short.length, long.length]).toEqual([64, 65]);
    expect(acme.crypto.readCsrDomains(await certificateRequest(short, key))).toEqual({ commonName: short, altNames: [short] });
    const withoutCommonName = acme.crypto.readCsrDomains(await certificateRequest(long, key));
    expect(withoutCommonName.commonName).toBeNull();
    expect(withoutCommonName.altNames).toEqual([long]);
  });
});
