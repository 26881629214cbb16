/**
 * `inboxd doctor`: the checks the VPS walkthrough would otherwise leave to `dig` and guesswork.
 * Each check answers one question and, when the answer is no, says what to do. Protocol code:
 * a resolver, plain values and sockets in, findings out.
 */
import { X509Certificate } from "node:crypto";
import * as dgram from "node:dgram";
import { accessSync, constants, statfsSync, statSync } from "node:fs";
import * as net from "node:net";
import { NTP_PORT } from "../config";
import { DnsLookupError, isNullMx, type Resolver } from "../dns/resolver";
import { parseServerAddress } from "../dns/wire";
import { checkRecord, checkSpf } from "../domains/dns-checks";
import type { RecordSpec, ServerIdentity } from "../domains/records";
import { isValidDomainName } from "../mail/address";

export type Finding = { ok: boolean; check: string; detail: string; fix?: string };

const pass = (check: string, detail: string): Finding => ({ ok: true, check, detail });
const fail = (check: string, detail: string, fix: string): Finding => ({ ok: false, check, detail, fix });

const sameName = (a: string, b: string) => a.toLowerCase().replace(/\.$/, "") === b.toLowerCase().replace(/\.$/, "");
const describe = (error: unknown) => (error instanceof DnsLookupError ? `${error.rrtype} ${error.hostname}: ${error.code}` : error instanceof Error ? error.message : String(error));

/** Receivers greet, verify and look up this name: it must be a fully qualified domain name. */
export function checkHostname(hostname: string): Finding {
  if (isValidDomainName(hostname.replace(/\.$/, ""))) {
    return pass("host name", `${hostname} is a fully qualified domain name`);
  }
  return fail("host name", `'${hostname}' is not a fully qualified domain name`, "set INBOXD_HOSTNAME to the server's full name, e.g. mx.example.com");
}

/**
 * RFC 5321 §4.5.1: mail to postmaster MUST be accepted. inboxd takes it, and the reserved role
 * addresses', into the operator's inbox INBOXD_POSTMASTER_INBOX names; without one it refuses them.
 */
export function checkPostmaster(address: string, inboxExists: boolean): Finding {
  if (!address) return fail("postmaster", "INBOXD_POSTMASTER_INBOX is not set: mail to postmaster (which RFC 5321 §4.5.1 says MUST be accepted) and the reserved addresses is refused with 550", "create an inbox of your own and set INBOXD_POSTMASTER_INBOX to its address");
  if (!inboxExists) {
    // The API refuses the address while the setting names it (src/inboxes/service.ts), so it is created with the setting unset.
    return fail(
      "postmaster",
      `INBOXD_POSTMASTER_INBOX is ${address}, but no inbox has that address: mail to postmaster is deferred with 451 (senders retry it for some days)`,
      `set INBOXD_POSTMASTER_INBOX to the address of an inbox that exists; or unset it, restart, create the inbox ${address}, set it again and restart`,
    );
  }
  return pass("postmaster", `mail to postmaster and the reserved addresses goes to ${address}`);
}

/** The host name's A/AAAA records and INBOXD_PUBLIC_IPS must name the same addresses. */
export async function checkHostAddresses(resolver: Resolver, server: ServerIdentity): Promise<{ finding: Finding; addresses: string[] }> {
  const check = "address records";
  let published: string[];
  try {
    published = await resolver.lookupHostAddresses(server.hostname);
  } catch (error) {
    return { finding: fail(check, `no A/AAAA record for ${server.hostname} (${describe(error)})`, `publish ${server.hostname} A (and AAAA) with this server's public address`), addresses: [] };
  }
  if (published.length === 0) return { finding: fail(check, `${server.hostname} has no A/AAAA record`, `publish ${server.hostname} A (and AAAA) with this server's public address`), addresses: [] };
  if (server.publicIps.length === 0) {
    return { finding: fail(check, `INBOXD_PUBLIC_IPS is not set; ${server.hostname} resolves to ${published.join(", ")}`, `set INBOXD_PUBLIC_IPS=${published.join(",")} if these are this server's addresses`), addresses: published };
  }
  const unpublished = server.publicIps.filter((ip) => !published.includes(ip));
  const foreign = published.filter((ip) => !server.publicIps.includes(ip));
  if (unpublished.length || foreign.length) {
    const parts = [unpublished.length ? `not published: ${unpublished.join(", ")}` : "", foreign.length ? `published but not in INBOXD_PUBLIC_IPS: ${foreign.join(", ")}` : ""].filter(Boolean);
    return { finding: fail(check, `${server.hostname} and INBOXD_PUBLIC_IPS disagree (${parts.join("; ")})`, `make the A/AAAA records of ${server.hostname} exactly INBOXD_PUBLIC_IPS`), addresses: server.publicIps };
  }
  return { finding: pass(check, `${server.hostname} resolves to ${published.join(", ")}, as INBOXD_PUBLIC_IPS says`), addresses: server.publicIps };
}

/**
 * Forward-confirmed reverse DNS: the PTR of each address names the host, and the host resolves
 * back to that address. Large receivers refuse or junk mail from addresses without it.
 */
export async function checkReverseDns(resolver: Resolver, hostname: string, addresses: string[]): Promise<Finding[]> {
  return Promise.all(
    addresses.map(async (ip) => {
      const check = `reverse DNS of ${ip}`;
      const fix = `set the reverse DNS (PTR) of ${ip} to ${hostname} in the provider's panel`;
      let names: string[];
      try {
        names = await resolver.ptr(ip);
      } catch (error) {
        return fail(check, `no PTR record (${describe(error)})`, fix);
      }
      if (!names.some((name) => sameName(name, hostname))) return fail(check, names.length ? `PTR names ${names.join(", ")}, not ${hostname}` : "no PTR record", fix);
      try {
        const back = await resolver.lookupHostAddresses(hostname);
        if (!back.includes(ip)) return fail(check, `PTR names ${hostname}, which does not resolve back to ${ip}`, `publish ${hostname} ${ip.includes(":") ? "AAAA" : "A"} ${ip}`);
      } catch (error) {
        return fail(check, `PTR names ${hostname}, which does not resolve (${describe(error)})`, `publish ${hostname} ${ip.includes(":") ? "AAAA" : "A"} ${ip}`);
      }
      return pass(check, `PTR ${hostname}, which resolves back to ${ip}`);
    }),
  );
}

/** Each record a domain must publish (as `inboxd dns` or the domain's record list shows it), looked up as receivers do. */
export async function checkDomainRecords(resolver: Resolver, server: ServerIdentity, domain: string, records: RecordSpec[]): Promise<Finding[]> {
  return Promise.all(
    records.map(async (record) => {
      const check = `${domain}: ${record.type} ${record.name}`;
      const outcome = await checkRecord(resolver, server, domain, record);
      if (outcome.result === "verified") return pass(check, "published as required");
      const value = record.type === "MX" ? `${record.priority ?? 10} ${record.value}` : `"${record.value}"`;
      return fail(check, outcome.reason, `publish ${record.name} ${record.type} ${value}`);
    }),
  );
}

/** Bounces and the EHLO name use the host name, whose own SPF record receivers check (RFC 7208 §2.3, §2.4). */
export async function checkHostSpf(resolver: Resolver, server: ServerIdentity, spfValue: string): Promise<Finding> {
  const check = `${server.hostname}: SPF`;
  const outcome = await checkSpf(resolver, server.hostname, server);
  return outcome.result === "verified" ? pass(check, "authorises this server") : fail(check, outcome.reason, `publish ${server.hostname} TXT "${spfValue}"`);
}

/**
 * Whether this machine can open SMTP connections to another domain's MX: many providers block
 * outbound port 25. A 220 greeting (RFC 5321 §4.2) is the proof; nothing is sent after it.
 */
export async function checkOutboundPort(resolver: Resolver, probeDomain: string, port: number, timeoutMs: number): Promise<Finding> {
  const check = `outbound port ${port}`;
  const fix = `ask the provider to lift its block on outbound port ${port}, or send through a relay (INBOXD_SMTP_RELAY)`;
  let host: string;
  let address: string | undefined;
  try {
    const records = await resolver.mx(probeDomain);
    if (records.length === 0 || isNullMx(records)) return fail(check, `${probeDomain} publishes no usable MX to try`, "set INBOXD_DOCTOR_PROBE_DOMAIN to a domain that receives mail");
    host = records.sort((a, b) => a.priority - b.priority)[0].exchange;
    [address] = await resolver.lookupHostAddresses(host);
    if (!address) return fail(check, `${host}, the MX of ${probeDomain}, has no address`, "set INBOXD_DOCTOR_PROBE_DOMAIN to a domain that receives mail");
  } catch (error) {
    return fail(check, `look-up of ${probeDomain}'s MX failed (${describe(error)})`, "check INBOXD_DNS_SERVERS and the network");
  }
  const greeting = await new Promise<string>((resolve) => {
    const socket = net.connect({ host: address, port });
    let received = "";
    const done = (result: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(received || `no answer within ${timeoutMs} ms`), timeoutMs);
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (received.includes("\n")) done(received.split(/\r?\n/)[0]);
    });
    socket.on("error", (error) => done(error.message));
  });
  return greeting.startsWith("220") ? pass(check, `${host}:${port} greeted: ${greeting.slice(0, 80)}`) : fail(check, `${host}:${port}: ${greeting}`, fix);
}

const DAY_MS = 86_400_000;
/** Let's Encrypt renews at 30 days left; fewer than 14 means renewal is failing. */
const CERTIFICATE_WARNING_DAYS = 14;

/** The STARTTLS certificate names the host and is not about to expire. */
export function checkCertificate(pem: string | undefined, source: string, hostname: string, now: number): Finding {
  const check = "TLS certificate";
  if (pem === undefined) return pass(check, `self-signed (${source}); senders accept it for STARTTLS (RFC 7435), set INBOXD_TLS_CERT for a CA-signed one`);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (error) {
    return fail(check, `${source} is not a PEM certificate (${(error as Error).message})`, "point INBOXD_TLS_CERT at the full-chain PEM file");
  }
  const daysLeft = Math.floor((Date.parse(certificate.validTo) - now) / DAY_MS);
  if (!certificate.checkHost(hostname)) return fail(check, `${source} is not valid for ${hostname} (${certificate.subjectAltName ?? certificate.subject})`, `get a certificate that names ${hostname}`);
  if (daysLeft < 0) return fail(check, `${source} expired on ${certificate.validTo}`, "renew the certificate");
  if (daysLeft < CERTIFICATE_WARNING_DAYS) return fail(check, `${source} expires in ${daysLeft} days (${certificate.validTo})`, "renew the certificate (is the renewal job running?)");
  return pass(check, `valid for ${hostname}, ${daysLeft} days left (until ${certificate.validTo})`);
}

/**
 * A certificate inboxd obtains over ACME: issued, valid for its name, and renewing without
 * failures (its lifetime is the CA's choice, so no fixed number of days left is asked for).
 */
export function checkAcmeCertificate(row: { name: string; certificatePem: string | null; failures: number; lastError: string | null; nextAttemptAt: number }, now: number): Finding {
  const check = `ACME certificate ${row.name}`;
  const nextTry = new Date(row.nextAttemptAt).toISOString();
  const fix = `make ${row.name} resolve to this server and port 80 (INBOXD_ACME_HTTP_PORT) reach inboxd; the log's 'certificate not obtained' lines say more`;
  if (!row.certificatePem) return fail(check, row.failures ? `none yet after ${row.failures} failed tries (${row.lastError}); next try ${nextTry}` : "none yet, being requested", fix);
  const certificate = new X509Certificate(row.certificatePem);
  if (!certificate.checkHost(row.name)) return fail(check, `the stored certificate is not valid for ${row.name} (${certificate.subjectAltName ?? certificate.subject})`, fix);
  if (Date.parse(certificate.validTo) < now) return fail(check, `expired on ${certificate.validTo}${row.failures ? ` after ${row.failures} failed renewals (${row.lastError})` : ""}; next try ${nextTry}`, fix);
  if (row.failures > 0) return fail(check, `renewal failed ${row.failures} times (${row.lastError}); the current one serves until ${certificate.validTo}; next try ${nextTry}`, fix);
  return pass(check, `valid until ${certificate.validTo}, issued by ${certificate.issuer.split("\n").find((line) => line.startsWith("CN=")) ?? certificate.issuer}; renewal due ${nextTry}`);
}

/** Free space below which the database may soon fail to write (and inbound mail be refused). */
const MIN_FREE_BYTES = 1024 ** 3;

/** The data dir is this user's alone, writable, with room to grow. */
export function checkDataDir(dataDir: string): Finding[] {
  const check = `data dir ${dataDir}`;
  let stats;
  try {
    stats = statSync(dataDir);
  } catch {
    return [fail(check, "does not exist", "start inboxd once (it creates it), or set INBOXD_DATA_DIR")];
  }
  if (!stats.isDirectory()) return [fail(check, "is not a directory", "set INBOXD_DATA_DIR to a directory")];
  const findings: Finding[] = [];
  const mode = stats.mode & 0o777;
  findings.push(mode & 0o077 ? fail(check, `mode ${mode.toString(8)} lets other users in`, `chmod 700 ${dataDir}`) : pass(check, `mode ${mode.toString(8)}`));
  try {
    accessSync(dataDir, constants.W_OK);
  } catch {
    findings.push(fail(check, "is not writable by this user", `chown the data dir to the user inboxd runs as`));
  }
  const space = statfsSync(dataDir);
  const free = space.bavail * space.bsize;
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  findings.push(free < MIN_FREE_BYTES ? fail("free disk", `${gib(free)} free at ${dataDir}`, "free space or grow the disk: mail is refused when the database cannot write") : pass("free disk", `${gib(free)} free at ${dataDir}`));
  return findings;
}

/** DKIM signatures, token expiry and TLS all read the clock; receivers doubt mail from the future. */
const MAX_CLOCK_OFFSET_MS = 2000;
// RFC 5905 §6: NTP counts seconds from 1900, 70 years (17 of them leap) before the Unix epoch.
const NTP_EPOCH_OFFSET_S = 2_208_988_800;

/** The clock against an NTP server (an SNTP client request, RFC 4330 §4-5). */
export async function checkClock(resolver: Resolver, server: string, timeoutMs: number, now: () => number = Date.now): Promise<Finding> {
  const check = "clock";
  const fix = "allow NTP (udp/123) out, or set INBOXD_DOCTOR_NTP_SERVER to a reachable server";
  const { host, port } = parseServerAddress(server, NTP_PORT);
  let address: string;
  try {
    [address] = await resolver.lookupHostAddresses(host);
    if (!address) return fail(check, `${host} has no address`, fix);
  } catch (error) {
    return fail(check, `could not look up ${host} (${describe(error)})`, fix);
  }
  const request = Buffer.alloc(48);
  request[0] = 0x23; // LI 0, version 4, mode 3 (client)
  const answer = await new Promise<{ offsetMs: number } | { error: string }>((resolve) => {
    const socket = dgram.createSocket(net.isIPv6(address) ? "udp6" : "udp4");
    const done = (result: { offsetMs: number } | { error: string }) => {
      clearTimeout(timer);
      socket.close();
      resolve(result);
    };
    const timer = setTimeout(() => done({ error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    const sentAt = now();
    socket.on("error", (error) => done({ error: error.message }));
    socket.on("message", (reply) => {
      if (reply.length < 48) return;
      const receivedAt = now();
      const transmitMs = (reply.readUInt32BE(40) - NTP_EPOCH_OFFSET_S) * 1000 + (reply.readUInt32BE(44) / 2 ** 32) * 1000;
      done({ offsetMs: transmitMs - (sentAt + receivedAt) / 2 });
    });
    socket.send(request, port, address, (error) => error && done({ error: error.message }));
  });
  if ("error" in answer) return fail(check, `could not ask ${server}: ${answer.error}`, fix);
  const offset = Math.round(answer.offsetMs);
  if (Math.abs(offset) > MAX_CLOCK_OFFSET_MS) return fail(check, `off by ${offset} ms against ${server}`, "enable time synchronisation (timedatectl set-ntp true, or chrony)");
  return pass(check, `within ${Math.abs(offset)} ms of ${server}`);
}
