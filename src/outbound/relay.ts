/** INBOXD_SMTP_RELAY: every message goes through one smarthost, with authentication, instead of direct MX. */
import { isIP } from "node:net";
import type { SessionOptions } from "./smtp-client";

export interface Relay {
  host: string;
  port: number;
  tls: SessionOptions["tls"];
  verifyCertificate: boolean;
  auth?: { user: string; pass: string };
}

/**
 * `smtps://user:pass@host:port` (TLS from the start, port 465 by default) or `smtp://...` (STARTTLS,
 * port 587 by default: RFC 6409 submission). Credentials only ever cross an encrypted connection
 * to a certificate that verifies (RFC 4954 §4, RFC 8314 §5), except to a relay on this machine.
 */
export function relayFromUrl(value: string): Relay {
  const url = new URL(value);
  const implicit = url.protocol === "smtps:";
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const local = isLoopback(host);
  const user = decodeURIComponent(url.username);
  return {
    host,
    port: url.port ? Number(url.port) : implicit ? 465 : 587,
    tls: implicit ? "implicit" : local ? "opportunistic" : "required",
    verifyCertificate: !local,
    auth: user ? { user, pass: decodeURIComponent(url.password) } : undefined,
  };
}

function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}
