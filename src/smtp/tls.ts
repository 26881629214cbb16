// The STARTTLS certificate: the operator's (INBOXD_TLS_CERT and INBOXD_TLS_KEY, PEM files), else a
// self-signed one for INBOXD_HOSTNAME, made on first start and kept in the data dir. Senders
// encrypt opportunistically and do not verify an MX's certificate (RFC 7435), so a self-signed
// one still keeps the mail private on the wire.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
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
    createSecureContext(pair);
  } catch (error) {
    throw new ConfigError(`INBOXD_TLS_CERT, INBOXD_TLS_KEY: ${tlsCert} and ${tlsKey} are not a usable PEM certificate and its key (${(error as Error).message})`);
  }
  return pair;
}

export function loadTlsCertificate(app: App): PemCertificate {
  const { dataDir, hostname } = app.config;
  const configured = operatorCertificate(app.config);
  if (configured) return configured;
  const certPath = join(dataDir, "smtp-tls.crt");
  const keyPath = join(dataDir, "smtp-tls.key");
  // The certificate is written last: when it exists, so does its key.
  if (existsSync(certPath)) return { cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") };
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
