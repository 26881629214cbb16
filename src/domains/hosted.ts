/**
 * Which mail domains this server hosts, and who may use them: the service's own mail domain for
 * everyone, and each custom domain, for its organization, once its MX record is verified.
 */
import type { App } from "../app";
import { invalid } from "../errors";
import type { Aggregates } from "../store";
import { normalizeDomainName } from "./name";

const canonical = (domain: string) => normalizeDomainName(domain) ?? domain.toLowerCase();

/**
 * Whether mail for this domain is ours to accept (SMTP asks it at RCPT). `store`: where the domain
 * is looked up (the caller's transaction, when in one).
 */
export async function isHostedDomain(app: App, store: Aggregates, domain: string): Promise<boolean> {
  const name = canonical(domain);
  if (name === app.config.mailDomain.toLowerCase()) return true;
  return (await store.domains.findByName(name))?.receiving === true;
}

/**
 * Throws a 422 naming `email` unless an inbox of this organization may have an address on the
 * domain: the service's mail domain, or one of the organization's domains with receiving verified.
 * `store`: the transaction that creates the inbox, which holds the domain until its commit (a
 * domain deleted in between would leave the inbox on no domain).
 */
export async function assertUsableInboxDomain(app: App, store: Aggregates, organizationId: string, domain: string): Promise<void> {
  const name = canonical(domain);
  const serviceDomain = app.config.mailDomain.toLowerCase();
  if (name === serviceDomain) return;
  const row = await store.domains.findByName(name);
  if (!row || row.organizationId !== organizationId) {
    throw invalid(`email: ${name} is neither the service's mail domain (${serviceDomain}) nor a domain of this organization; add it with POST /v1/domains`);
  }
  if (!row.receiving) {
    throw invalid(`email: the domain ${name} is not verified for receiving yet; publish its MX record, then POST /v1/domains/${name}/verify`);
  }
}
