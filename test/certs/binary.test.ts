// The compiled executable obtains its certificate from pebble and serves it over HTTPS: acme-client
// and its ASN.1 libraries work inside `bun build --compile`, not only from the source.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:tls";
import { eventually, inboxdCommand, startChildServer, tempDir, testEnv, type ChildServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { pebbleMissing, startPebble, type Pebble } from "../peers/pebble";
import { freePort } from "../peers/ports";

const HOST = "mx.binary-certs.test";

if (pebbleMissing) test.skip(`ACME in the executable: skipped, ${pebbleMissing}`, () => {});

describe.skipIf(Boolean(pebbleMissing))("ACME in the executable", () => {
  let dns: DnsServer;
  let pebble: Pebble;
  let child: ChildServer;
  let dataDir: string;

  beforeAll(async () => {
    dns = await startDnsServer();
    dns.set(HOST, "A", ["127.0.0.1"]);
    const challengePort = await freePort();
    pebble = await startPebble({ dir: tempDir("pebble"), dnsServer: dns.address, httpPort: challengePort, validitySeconds: 3600 });
    dataDir = tempDir();
    child = await startChildServer(
      testEnv(dataDir, {
        INBOXD_HOSTNAME: HOST,
        INBOXD_MAIL_DOMAIN: "binary-certs.test",
        INBOXD_DNS_SERVERS: dns.address,
        INBOXD_ACME_EMAIL: "ops@binary-certs.test",
        INBOXD_ACME_DIRECTORY: pebble.directoryUrl,
        INBOXD_ACME_CA_FILE: pebble.caFile,
        INBOXD_ACME_HTTP_PORT: String(challengePort),
        INBOXD_HTTPS_PORT: "0",
        INBOXD_MTA_STS_MODE: "none",
      }),
      { command: inboxdCommand() },
    );
  }, 30_000);

  afterAll(async () => {
    await child?.kill();
    await pebble?.stop();
    await dns?.close();
  });

  test("logs the issuance and serves the certificate over HTTPS", async () => {
    await eventually("the issuance logged", () => child.output(), (output) => output.includes('"event":"certificate issued"'), 30_000);
    const httpsPort = Number(/"part":"https","address":"[^"]*:(\d+)"/.exec(child.output())![1]);
    const root = await pebble.issuingRoot();
    const authorized = await eventually(
      "HTTPS serving it",
      () =>
        new Promise<boolean>((resolve) => {
          const socket = connect({ host: "127.0.0.1", port: httpsPort, servername: HOST, ca: root, rejectUnauthorized: false }, () => {
            resolve(socket.authorized);
            socket.end();
          });
          // A connection that reaches the listener being replaced by the one with the new certificate
          // can be reset (docs/deployment.md): the next try reaches the new one.
          socket.on("error", () => resolve(false));
        }),
      (value) => value,
    );
    expect(authorized).toBe(true);
  }, 40_000);
});
