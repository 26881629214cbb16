// Recipient policy at RCPT: mail is accepted only for inboxes that exist on a domain this server
// hosts, and for the return paths of our own deliveries (bounces and complaints). Everything else
// is refused in the dialogue, so inboxd never relays and never bounces to a forged sender.
import type { App } from "../app";
import { isHostedDomain } from "../domains/hosted";
import { isOperatorAddress } from "../inboxes/operator-addresses";
import { inboxForAddress } from "../inboxes/service";
import { baseAddress, parseAddress } from "../mail/address";
import { parseReturnPath } from "../outbound/return-path";
import { isTlsReportAddress } from "../mta-sts/tls-reports";
import type { InboxRecord } from "../store";
import { SmtpReply } from "./replies";
import { refuseBlockedEnvelopeSender } from "./sender-access";

export type RecipientTarget = { kind: "inbox"; inbox: InboxRecord } | { kind: "returnPath"; deliveryId: string } | { kind: "tlsReport" };

/**
 * Where mail for `address` (as given in RCPT TO) from `mailFrom` ("" for the null reverse-path)
 * goes; throws the SmtpReply that refuses it otherwise.
 */
export async function routeRecipient(app: App, given: string, mailFrom: string): Promise<RecipientTarget> {
  // Quoted or not: `"tlsrpt"@host` is tlsrpt@host (RFC 5322 §3.2.4: the quotes are no part of the local part).
  const givenParsed = parseAddress(given);
  const address = givenParsed?.address ?? given;
  const returnPath = parseReturnPath(app, address);
  if (returnPath) {
    // Only the return path of a delivery of ours takes reports: another, or a wrong tag, is
    // refused here, before a DATA read for it, with one reply for both (no id is told to exist).
    const { deliveryId } = returnPath;
    if (!deliveryId || !(await app.store.deliveries.find(deliveryId))) throw new SmtpReply(550, "5.1.1", "No such user here");
    return { kind: "returnPath", deliveryId };
  }
  if (isTlsReportAddress(app, address)) return { kind: "tlsReport" };

  // RFC 5321 §4.1.1.3 and §4.5.1: the domainless "postmaster" (any case) names the postmaster of
  // the server's domain, and a server MUST accept it; so is postmaster at the host name, which
  // takes mail too (return paths, TLS reports) and which other servers know as its name, unless
  // the host name is a domain hosted here (the mail domain itself, or a custom domain added before
  // the host names were refused as one), whose own postmaster it is.
  const lower = address.toLowerCase();
  const hostPostmaster = lower === `postmaster@${app.config.hostname.toLowerCase()}` && !(await isHostedDomain(app, app.store, app.config.hostname));
  const postmaster = lower === "postmaster" || hostPostmaster;
  const parsed = postmaster ? parseAddress(`postmaster@${app.config.mailDomain}`) : givenParsed;
  if (!parsed) throw new SmtpReply(553, "5.1.3", "Mailbox name not allowed");
  if (!(await isHostedDomain(app, app.store, parsed.domain))) throw new SmtpReply(550, "5.7.1", "Relaying denied");

  // RFC 5233 subaddressing: `name+tag@domain` reaches `name@domain` unless `name+tag` is an inbox itself.
  const inbox = await inboxForAddress(app, app.store, parsed.address);
  if (inbox) {
    await refuseBlockedEnvelopeSender(app, inbox, mailFrom);
    return { kind: "inbox", inbox };
  }
  const base = baseAddress(parsed.address)!;
  if (!(await isOperatorAddress(app, app.store, base))) throw new SmtpReply(550, "5.1.1", "No such user here");
  // RFC 5321 §4.5.1 requires postmaster to be accepted; without an inbox for it, the refusal at least tells the sender why.
  if (!app.config.postmasterInbox) {
    throw new SmtpReply(550, "5.1.1", `Mail for ${base} goes to the operator of this server, who has not configured an inbox for it (INBOXD_POSTMASTER_INBOX)`);
  }
  // An inbox the operator has yet to create (the API keeps it from being deleted): senders retry a 4xx, so the mail arrives once it is there.
  app.log.warn("smtp: the INBOXD_POSTMASTER_INBOX inbox does not exist; mail for the operator is deferred", { postmasterInbox: app.config.postmasterInbox, recipient: base });
  throw new SmtpReply(451, "4.3.0", `Mail for ${base} goes to the operator of this server, whose inbox for it is missing; try again later`);
}
