/**
 * Which host names inboxd serves over TLS with certificates of its own: the mail host (SMTP
 * STARTTLS and HTTPS), the API host, and mta-sts.<domain> for the service domain and each
 * custom domain whose MX is verified (RFC 8461 §3.3 serves the policy there, over HTTPS).
 */
import type { App } from "../app";
import type { Config } from "../config";

/** The HTTPS port: INBOXD_HTTPS_PORT, else 443 when ACME is on; undefined: no HTTPS listener. */
export const httpsPortOf = (config: Pick<Config, "httpsPort" | "acmeEmail">): number | undefined => config.httpsPort ?? (config.acmeEmail ? 443 : undefined);

export const mtaStsHost = (domain: string) => `mta-sts.${domain}`;

/** The names to hold certificates for, mail host first. */
export async function certificateNames(app: App): Promise<string[]> {
  const { hostname, apiHostname, mailDomain, mtaStsMode } = app.config;
  const names = [hostname, ...(apiHostname ? [apiHostname] : [])];
  if (mtaStsMode !== "none") for (const domain of [mailDomain, ...(await app.store.domains.receivingNames())]) names.push(mtaStsHost(domain));
  return [...new Set(names.map((name) => name.toLowerCase()))];
}
