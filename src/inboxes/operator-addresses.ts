/**
 * The operator's addresses: the role names reserved on the service's mail domain
 * (INBOXD_RESERVED_LOCAL_PARTS) and postmaster on every hosted domain, whose mail goes to the
 * operator's inbox (INBOXD_POSTMASTER_INBOX) instead of to an organization's.
 */
import type { App } from "../app";
import { isHostedDomain } from "../domains/hosted";
import { TLS_REPORT_LOCAL_PART } from "../mta-sts/tls-reports";
import { RETURN_PATH_LOCAL_PART } from "../outbound/return-path";
import type { Aggregates, InboxRecord } from "../store";

const localAndDomain = (address: string) => {
  const at = address.lastIndexOf("@");
  return { local: address.slice(0, at), domain: address.slice(at + 1) };
};

/**
 * Whether `base` (a normalised address without its subaddress) names a role on the service's mail
 * domain. The domain is shared by every organization, so these names stay the operator's. The
 * default list: RFC 2142 §4 (abuse, noc, security) and §5 for the services the domain runs
 * (postmaster for SMTP, hostmaster for DNS, webmaster and www for HTTP; not usenet, news, uucp or
 * ftp), which must reach whoever runs it; admin, administrator, webmaster, hostmaster and
 * postmaster, which certificate authorities mail to prove control of a domain (CA/Browser Forum
 * Baseline Requirements §3.2.2.4.4); root and mailer-daemon, the system's own; noreply and
 * no-reply, which readers take for the service's own senders; dmarc, where DMARC reports go.
 */
export function isReservedAddress(app: App, base: string): boolean {
  const { local, domain } = localAndDomain(base);
  return domain === app.config.mailDomain.toLowerCase() && app.config.reservedLocalParts.includes(local);
}

/**
 * What the server itself receives at `base` (a normalised address without its subaddress), when
 * it does: the reports of its deliveries at `bounces+...` and TLS reports at `tlsrpt`, both at
 * INBOXD_HOSTNAME. The SMTP server takes such mail before any inbox is looked for, so an inbox
 * there, on a host name that is also a hosted domain, would have its mail read as reports.
 */
export function serverAddressUse(app: App, base: string): string | undefined {
  const { local, domain } = localAndDomain(base);
  if (domain !== app.config.hostname.toLowerCase()) return undefined;
  if (local === RETURN_PATH_LOCAL_PART) return "the return path of its deliveries, where bounces come back";
  if (local === TLS_REPORT_LOCAL_PART) return "where TLS reports come (RFC 8460)";
  return undefined;
}

/**
 * Whether mail for `base` belongs to the operator when no inbox of an organization takes it:
 * the reserved names, and postmaster at any domain this server receives for, which RFC 5321
 * §4.5.1 says MUST be accepted.
 */
export async function isOperatorAddress(app: App, store: Aggregates, base: string): Promise<boolean> {
  const { local, domain } = localAndDomain(base);
  return isReservedAddress(app, base) || (local === "postmaster" && (await isHostedDomain(app, store, domain)));
}

/** The inbox INBOXD_POSTMASTER_INBOX names, if set and the inbox exists. */
export async function operatorInbox(app: App, store: Aggregates): Promise<InboxRecord | undefined> {
  return app.config.postmasterInbox ? store.inboxes.findByEmail(app.config.postmasterInbox) : undefined;
}
