// The STARTTLS certificate: the operator's (INBOXD_TLS_CERT and INBOXD_TLS_KEY, PEM files), else a
// self-signed one for INBOXD_HOSTNAME, made on first start and kept in the data dir. Senders
// encrypt opportunistically and do not verify an MX's certificate (RFC 7435), so a self-signed
// one still keeps the mail private on the wire.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { createSecureContext } from "node:tls";
import type { App } from "../app";
import { ConfigError, type Config } from "../config";
import { selfSignedCert, type PemCertificate } from "./self-signed";

/**
 * The operator's certificate and key, read and tried; undefined when none is configured. Called
 * before anything starts, so that a wrong file stops the start rather than the first STARTTLS.
 */
export function operatorCertificate({ tlsCert, tlsKey }: Pick<Config, "tlsCert" | "tlsKey">): PemCertificate | undefined {
  if (!tlsCert && !tlsKey) return undefined;
  if (!tlsCert || !tlsKey) throw new ConfigError("INBOXD_TLS_CERT and INBOXD_TLS_KEY: set both (PEM files) or neither");
  const pair = { cert: readPem("INBOXD_TLS_CERT", tlsCert), key: readPem("INBOXD_TLS_KEY", tlsKey) };
  try {
    // An empty file is no certificate to createSecureContext but "none given": the start went on,
    // and every STARTTLS (and the HTTPS listener, later, with exit 1) failed. X509Certificate and
    // createPrivateKey refuse it, and anything else that holds no PEM block.
    new X509Certificate(pair.cert);
    createPrivateKey(pair.key);
    createSecureContext(pair);
  } catch (error) {
    throw new ConfigError(`INBOXD_TLS_CERT, INBOXD_TLS_KEY: ${tlsCert} and ${tlsKey} are not a usable PEM certificate and its key (${(error as Error).message})`);
  }
  return pair;
}

/** Made again this long before it expires (it is made for ten years). */
const SELF_SIGNED_RENEW_BEFORE_MS = 14 * 24 * 60 * 60 * 1000;

/** The data dir's self-signed certificate and key: `smtp-tls.crt` and `smtp-tls.key`. */
export const selfSignedPaths = (dataDir: string) => ({ certPath: join(dataDir, "smtp-tls.crt"), keyPath: join(dataDir, "smtp-tls.key") });

/**
 * The self-signed certificate kept in the data dir, or why it cannot serve `hostname` now: gone,
 * unreadable, damaged, not matching its key, naming another host (INBOXD_HOSTNAME changed), or
 * expiring within 14 days. Undefined when there is none yet.
 */
export function keptSelfSigned(dataDir: string, hostname: string, now: number): { pair: PemCertificate } | { problem: string } | undefined {
  const { certPath, keyPath } = selfSignedPaths(dataDir);
  if (!existsSync(certPath)) return undefined;
  try {
    const pair = { cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") };
    createSecureContext(pair);
    const certificate = new X509Certificate(pair.cert);
    if (!certificate.checkHost(hostname)) return { problem: `${certPath} names ${certificate.subjectAltName ?? certificate.subject}, not ${hostname}` };
    if (Date.parse(certificate.validTo) - now < SELF_SIGNED_RENEW_BEFORE_MS) return { problem: `${certPath} expires on ${certificate.validTo}` };
    return { pair };
  } catch (error) {
    return { problem: `${certPath} and ${keyPath} are not a usable certificate and its key (${(error as Error).message})` };
  }
}

export function loadTlsCertificate(app: App): PemCertificate {
  const { dataDir, hostname } = app.config;
  const configured = operatorCertificate(app.config);
  if (configured) return configured;
  const { certPath, keyPath } = selfSignedPaths(dataDir);
  // The certificate is written last: when it exists, so does its key. One that cannot serve is
  // inboxd's own file, made again rather than stopping the start (or failing every STARTTLS).
  const kept = keptSelfSigned(dataDir, hostname, app.clock.now());
  if (kept && "pair" in kept) return kept.pair;
  if (kept) app.log.warn("making the self-signed STARTTLS certificate again", { reason: kept.problem });
  const generated = selfSignedCert(hostname, app.clock.date());
  writeAtomically(keyPath, generated.key, 0o600);
  writeAtomically(certPath, generated.cert, 0o644);
  app.log.info("generated a self-signed STARTTLS certificate", { hostname, path: certPath });
  return generated;
}

/** A PEM file named by a setting; unreadable, a ConfigError that names the setting. */
export function readPem(setting: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`${setting}: cannot read ${path}: ${(error as Error).message}`);
  }
}

function writeAtomically(path: string, content: string, mode: number): void {
  writeFileSync(`${path}.tmp`, content, { mode });
  renameSync(`${path}.tmp`, path);
}

/** A PEM file of CA certificates named by a setting; unreadable or holding none, a ConfigError that names the setting. */
export function readCertificates(setting: string, path: string): string {
  const pem = readPem(setting, path);
  try {
    new X509Certificate(pem);
  } catch (error) {
    throw new ConfigError(`${setting}: ${path} holds no PEM certificate (${(error as Error).message})`);
  }
  return pem;
}
