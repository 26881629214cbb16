// Connection-level rules, on a server configured away from the defaults: the greeting delay
// against early talkers, the connection caps, the idle and slow-client timeouts, DMARC
// enforcement (which analyses before the 250) and the operator's own STARTTLS certificate.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { insertInbox } from "../../src/inboxes/service";
import { peerGroup } from "../../src/net/peer-group";
import { queryRows, seedOrganization, startTestServer, tempDir, type TestServer } from "../harness";
import { selfSignedCert } from "../peers/tls";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { sendMail } from "./mail-client";
import { openSession, startTransaction } from "./raw-client";

const GREETING_DELAY_MS = 200;
const IDLE_TIMEOUT_MS = 1000;
const DATA_TIMEOUT_MS = 1200;
let dns: DnsServer;
let server: TestServer;

const operatorCertificate = selfSignedCert("mx.operator.test");
const tlsDir = tempDir("smtp-tls");

beforeAll(async () => {
  writeFileSync(join(tlsDir, "cert.pem"), operatorCertificate.cert);
  writeFileSync(join(tlsDir, "key.pem"), operatorCertificate.key);
  dns = await startDnsServer();
  dns.set("strict.test", "TXT", ["v=spf1 ip4:192.0.2.1 -all"]);
  dns.set("_dmarc.strict.test", "TXT", ["v=DMARC1; p=reject"]);
  dns.set("relaxed.test", "TXT", ["v=spf1 ip4:192.0.2.1 -all"]);
  dns.set("_dmarc.relaxed.test", "TXT", ["v=DMARC1; p=none"]);
  server = await startTestServer({
    env: {
      INBOXD_DNS_SERVERS: dns.address,
      INBOXD_SMTP_GREETING_DELAY_MS: String(GREETING_DELAY_MS),
      INBOXD_SMTP_MAX_CONNECTIONS: "4",
      INBOXD_SMTP_MAX_CONNECTIONS_PER_IP: "2",
      INBOXD_SMTP_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
      INBOXD_SMTP_DATA_TIMEOUT_MS: String(DATA_TIMEOUT_MS),
      INBOXD_DMARC_ENFORCE: "1",
      INBOXD_TLS_CERT: join(tlsDir, "cert.pem"),
      INBOXD_TLS_KEY: join(tlsDir, "key.pem"),
    },
  });
  const { organizationId } = await seedOrganization(server.app);
  await server.app.store.transaction((tx) => insertInbox(server.app, tx, organizationId, { email: "bob@inboxd.test" }));
});

afterAll(async () => {
  await server.cleanup();
  await dns.close();
  rmSync(tlsDir, { recursive: true, force: true });
});

const storedSubjects = async () => (await queryRows<{ subject: string }>(server.app, "SELECT subject FROM messages")).map((row) => row.subject);

describe("greeting delay", () => {
  test("a client that waits gets the greeting after the delay", async () => {
    const started = performance.now();
    const session = await openSession(server.smtpPort);
    expect(performance.now() - started).toBeGreaterThanOrEqual(GREETING_DELAY_MS - 20);
    session.end();
  });

  test("a client that talks before the greeting is refused with 421 and disconnected", async () => {
    const session = await openSession(server.smtpPort, { waitForGreeting: false });
    session.write("EHLO early.example\r\n");
    expect((await session.reply()).text).toMatch(/^421 .*You talk too soon/);
    await session.closed();
  });
});

describe("connection caps", () => {
  test("over the per-address cap: 421 at once; another address still gets in", async () => {
    const open = await Promise.all([openSession(server.smtpPort), openSession(server.smtpPort)]);
    const third = await openSession(server.smtpPort, { waitForGreeting: false });
    // Refused before the greeting delay: the first reply is the 421, not a 220.
    expect((await third.reply()).text).toMatch(/^421 4\.7\.0 .*from your address/);
    await third.closed();
    const other = await openSession(server.smtpPort, { localAddress: "127.0.0.2" });
    expect((await other.command("NOOP")).code).toBe(250);
    for (const session of [...open, other]) session.end();
  });

  test("a client is an IPv4 address, or an IPv6 address's /64 (a host's least prefix, RFC 6177): the caps count it so", () => {
    expect(peerGroup("192.0.2.1")).toBe("192.0.2.1");
    expect(peerGroup("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(peerGroup("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(peerGroup("2001:db8:1:2:bbbb:cccc:dddd:eeee")).toBe(peerGroup("2001:db8:1:2::9"));
    expect(peerGroup("2001:db8:1:3::1")).not.toBe(peerGroup("2001:db8:1:2::1"));
  });

  test("over the global cap: 421 whatever the address", async () => {
    const open = await Promise.all(["127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.3"].map((localAddress) => openSession(server.smtpPort, { localAddress })));
    const fifth = await openSession(server.smtpPort, { waitForGreeting: false, localAddress: "127.0.0.4" });
    expect((await fifth.reply()).text).toMatch(/^421 4\.7\.0 .*Too many connections/);
    for (const session of open) session.end();
    // Once the others are gone, the same address is welcome.
    await Bun.sleep(50);
    const later = await openSession(server.smtpPort, { localAddress: "127.0.0.4" });
    later.end();
  });
});

describe("timeouts", () => {
  test("an idle client is disconnected with 421", async () => {
    const session = await openSession(server.smtpPort);
    await session.command("EHLO client.example");
    expect((await session.reply(IDLE_TIMEOUT_MS * 3)).text).toMatch(/^421 .*Timeout/);
    await session.closed();
  });

  test("a client that trickles its data, never idle, is cut off at the data deadline and nothing is stored", async () => {
    const session = await openSession(server.smtpPort);
    await startTransaction(session, "alice@sender.test", ["bob@inboxd.test"]);
    expect((await session.command("DATA")).code).toBe(354);
    session.write("Subject: trickled\r\n\r\n");
    const trickle = setInterval(() => session.write("x"), IDLE_TIMEOUT_MS / 4);
    try {
      expect((await session.reply(DATA_TIMEOUT_MS * 3)).text).toMatch(/^421 4\.4\.2 .*took too long/);
      await session.closed();
    } finally {
      clearInterval(trickle);
    }
    expect(await storedSubjects()).not.toContain("trickled");
  });
});

describe("DMARC enforcement (INBOXD_DMARC_ENFORCE=1)", () => {
  test("a DMARC failure under p=reject is refused with 550 5.7.1 and not stored", async () => {
    const error = await sendMail(server.smtpPort, { from: "ceo@strict.test", to: ["bob@inboxd.test"], raw: "From: ceo@strict.test\r\nSubject: forged ceo\r\n\r\nPay now.\r\n" }).catch((e) => e);
    expect(error.response).toMatch(/^550 5\.7\.1 /);
    expect(await storedSubjects()).not.toContain("forged ceo");
  });

  test.each([
    ["a second mailbox in From", "From: ceo@strict.test, a@sender.test"],
    ["the address in encoded words", "From: CEO <=?utf-8?B?Y2VvQHN0cmljdC50ZXN0?=>"],
    ["more author domains than are judged", `From: ${Array.from({ length: 11 }, (_, i) => `a@d${i}.test`).join(", ")}, ceo@strict.test`],
  ])("so is one whose From hides the p=reject domain behind %s (it got 250, judged by no policy)", async (shape, from) => {
    const subject = `hidden ceo: ${shape}`;
    const error = await sendMail(server.smtpPort, { from: "a@sender.test", to: ["bob@inboxd.test"], raw: `${from}\r\nSubject: ${subject}\r\n\r\nPay now.\r\n` }).catch((e) => e);
    expect(error.response).toMatch(/^550 5\.7\.1 /);
    expect(await storedSubjects()).not.toContain(subject);
  });

  test("a DMARC failure under p=none is accepted, and stored (analysed) before its 250", async () => {
    await sendMail(server.smtpPort, { from: "news@relaxed.test", to: ["bob@inboxd.test"], raw: "From: news@relaxed.test\r\nSubject: relaxed policy\r\n\r\nHi.\r\n" });
    expect(await storedSubjects()).toContain("relaxed policy");
    expect(await queryRows(server.app, "SELECT id FROM accepted_inbound")).toEqual([]);
  });

  test("the analysis decides the reply: a message past the parser's limits (over 500 MIME parts) gets 552 and nothing is stored", async () => {
    const parts = Array.from({ length: 501 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join("");
    const raw = `From: alice@sender.test\r\nSubject: too many parts\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`;
    const error = await sendMail(server.smtpPort, { from: "alice@sender.test", to: ["bob@inboxd.test"], raw }).catch((e) => e);
    expect(error.response).toMatch(/^552 5\.3\.4 Message too complex/);
    expect(await storedSubjects()).not.toContain("too many parts");
  });
});

describe("operator's certificate", () => {
  test("STARTTLS presents INBOXD_TLS_CERT, which a client can verify against it", async () => {
    const sent = await sendMail(server.smtpPort, {
      from: "alice@sender.test",
      to: ["bob@inboxd.test"],
      raw: "From: alice@sender.test\r\nSubject: operator tls\r\n\r\nHi.\r\n",
      tls: { mode: "starttls", ca: operatorCertificate.cert, servername: "mx.operator.test" },
    });
    expect(sent.secure).toBe(true);
    expect(await storedSubjects()).toContain("operator tls");
  });
});
