// The STARTTLS certificate: the operator's (INBOXD_TLS_CERT and INBOXD_TLS_KEY, PEM files), else a
// self-signed one for INBOXD_HOSTNAME, made on first start and kept in the data dir. Senders
// encrypt opportunistically and do not verify an MX's certificate (RFC 7435), so a self-signed
// one still keeps the mail private on the wire.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { App } from "../app";
import { ConfigError } from "../config";
import { selfSignedCert, type PemCertificate } from "./self-signed";

export function loadTlsCertificate(app: App): PemCertificate {
  const { tlsCert, tlsKey, dataDir, hostname } = app.config;
  if (tlsCert || tlsKey) {
    if (!tlsCert || !tlsKey) throw new ConfigError("INBOXD_TLS_CERT and INBOXD_TLS_KEY: set both (PEM files) or neither");
    return { cert: readPem("INBOXD_TLS_CERT", tlsCert), key: readPem("INBOXD_TLS_KEY", tlsKey) };
  }
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

function readPem(setting: string, path: string): string {
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
