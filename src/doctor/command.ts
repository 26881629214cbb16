/** `inboxd doctor`: runs every check and prints one line each, with what to do under each failure. */
import { readFileSync } from "node:fs";
import type { Config } from "../config";
import { configuredResolver } from "../dns/resolver";
import { serverIdentity } from "../domains/present";
import { domainRecords, spfValue } from "../domains/records";
import { keptSelfSigned, selfSignedPaths } from "../smtp/tls";
import { databaseLabel, openStoreReadOnly } from "../store";
import { checkAcmeCertificate, checkCertificate, checkClock, checkDataDir, checkDomainRecords, checkHostAddresses, checkHostname, checkHostSpf, checkOutboundPort, checkPostmaster, checkReverseDns, type Finding } from "./checks";

const NETWORK_TIMEOUT_MS = 5000;

/** The findings, in the order the VPS walkthrough meets them. */
export async function runDoctor(config: Config, now: number = Date.now()): Promise<Finding[]> {
  const resolver = configuredResolver(config);
  const server = serverIdentity(config);
  const findings: Finding[] = [checkHostname(config.hostname)];
  const addresses = await checkHostAddresses(resolver, server);
  findings.push(addresses.finding, ...(await checkReverseDns(resolver, server.hostname, addresses.addresses)));
  findings.push(...(await readingDatabase(config, domainFindings)));
  if (server.hostname !== config.mailDomain.toLowerCase()) findings.push(await checkHostSpf(resolver, server, spfValue(server)));
  findings.push(config.smtpRelay ? { ok: true, check: "outbound port", detail: "mail leaves through INBOXD_SMTP_RELAY" } : await checkOutboundPort(resolver, config.doctorProbeDomain, config.outboundPort, NETWORK_TIMEOUT_MS));
  findings.push(...(config.acmeEmail ? await readingDatabase(config, acmeFindings) : [certificateFinding(config, now)]), ...checkDataDir(config.dataDir), await checkClock(resolver, config.doctorNtpServer, NETWORK_TIMEOUT_MS));
  return findings;

  /** With INBOXD_ACME_EMAIL: each certificate inboxd obtains, as the running server left it in the database. */
  async function acmeFindings(config: Config): Promise<Finding[]> {
    const store = await openStoreReadOnly(config);
    const rows = store ? await store.certificates.list().finally(() => store.close()) : [];
    if (rows.length === 0) return [{ ok: false, check: "ACME certificates", detail: "none requested yet", fix: "start inboxd with INBOXD_ACME_EMAIL set; it requests them at once" }];
    return rows.map((row) => checkAcmeCertificate(row, now));
  }

  async function domainFindings(config: Config): Promise<Finding[]> {
    const store = await openStoreReadOnly(config);
    if (!store) return [{ ok: false, check: `${config.mailDomain}: DKIM`, detail: `no database in ${config.dataDir} yet, so no DKIM keys`, fix: "run `inboxd dns` (or start inboxd once) to make the keys, then publish what it prints" }];
    try {
      const domains = [config.mailDomain.toLowerCase(), ...(await store.domains.receivingNames())];
      const perDomain = await Promise.all(domains.map(async (domain) => checkDomainRecords(resolver, server, domain, domainRecords(server, domain, await store.dkimKeys.forDomain(domain)))));
      const postmasterInbox = config.postmasterInbox ? await store.inboxes.findByEmail(config.postmasterInbox) : undefined;
      return [...perDomain.flat(), checkPostmaster(config.postmasterInbox, postmasterInbox !== undefined)];
    } finally {
      store.close();
    }
  }
}

/** The checks that read the database, or one FAIL line for a database that cannot be read (unreadable, damaged, not inboxd's) rather than an end to every check. */
async function readingDatabase(config: Config, read: (config: Config) => Promise<Finding[]>): Promise<Finding[]> {
  try {
    return await read(config);
  } catch (error) {
    return [
      {
        ok: false,
        check: "database",
        detail: `cannot read ${databaseLabel(config)} (${(error as Error).message})`,
        fix: "run doctor as the user inboxd runs as; a damaged database is put back from a backup with `inboxd restore`",
      },
    ];
  }
}

function certificateFinding(config: Config, now: number): Finding {
  if (!config.tlsCert) {
    const kept = keptSelfSigned(config.dataDir, config.hostname, now);
    const { certPath } = selfSignedPaths(config.dataDir);
    if (!kept) return { ok: true, check: "TLS certificate", detail: `none yet: inboxd makes a self-signed one (${certPath}) at its first start; set INBOXD_TLS_CERT for a CA-signed one` };
    if ("problem" in kept) return { ok: false, check: "TLS certificate", detail: kept.problem, fix: "restart inboxd: it makes its self-signed certificate again in place of one that cannot serve" };
    return checkCertificate(undefined, certPath, config.hostname, now);
  }
  try {
    return checkCertificate(readFileSync(config.tlsCert, "utf8"), config.tlsCert, config.hostname, now);
  } catch (error) {
    return { ok: false, check: "TLS certificate", detail: `cannot read ${config.tlsCert}: ${(error as Error).message}`, fix: "make INBOXD_TLS_CERT readable by the user inboxd runs as" };
  }
}

/** `ok` / `FAIL` lines, the fix indented under each failure. */
export function formatFindings(findings: Finding[]): string {
  const lines = findings.map((finding) => `${finding.ok ? "ok  " : "FAIL"}  ${finding.check}: ${finding.detail}${finding.ok || !finding.fix ? "" : `\n      -> ${finding.fix}`}`);
  const failures = findings.filter((finding) => !finding.ok).length;
  lines.push(failures ? `${failures} of ${findings.length} checks failed` : `all ${findings.length} checks passed`);
  return lines.join("\n") + "\n";
}
