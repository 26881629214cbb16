// Sender authentication of one received message with mailauth: SPF for the connecting address and
// the MAIL FROM (or HELO) identity, every DKIM signature up to a cap, DMARC alignment and ARC.
import { authenticate, type AuthenticateResult, type DNSResolver } from "mailauth";
import { withinBudget, type DnsBudget } from "./dns-budget";
import { fieldName, filterHeaderFields, readHeaderBlock, type HeaderBlock } from "./header-fields";

/** What a received message's sender authentication found: one result word per method (`pass`, `fail`, `none`, …). */
export type Authentication = { spf: string; dkim: string; dmarc: string; arc?: string };

/**
 * Signatures verified per message. Each costs DNS look-ups and a public-key operation, and a
 * sender controls how many there are; real mail carries one to three (author, ESP, list).
 */
export const MAX_DKIM_SIGNATURES = 10;

export interface SmtpIdentity {
  clientIp: string;
  helo: string;
  /** The MAIL FROM address; "" for the null reverse-path of bounces. */
  mailFrom: string;
}

export interface AuthenticationSettings {
  /** INBOXD_HOSTNAME: the authserv-id of our Authentication-Results. */
  authservId: string;
  resolver: DNSResolver;
  /** What each message's look-ups may take together (./dns-budget). */
  dnsBudget: DnsBudget;
}

export interface AuthenticationOutcome {
  /** One result word per method, as stored on the message and shown by the API. */
  authentication: Authentication;
  /** The Authentication-Results field (RFC 8601) with its CRLF. */
  field: string;
  /** DMARC failed and the sender domain asks receivers to reject such mail. */
  dmarcRejects: boolean;
  /**
   * DMARC failed under p=reject, or gave temperror, after the message's DNS budget cut a look-up
   * short: the verdict may be for want of our time, not for the sender's records.
   */
  dmarcUndecided: boolean;
}

/** `block`: raw's header block, when the caller has read it already. */
export async function authenticateMessage(raw: Buffer, identity: SmtpIdentity, settings: AuthenticationSettings, block = readHeaderBlock(raw)): Promise<AuthenticationOutcome> {
  // mailauth's own time limit (maxElapsedTime) bounds SPF alone, and DKIM's key look-ups come
  // before SPF and DMARC's after: the budget is kept in the resolver they all ask. Its SPF look-up
  // limits stay at their defaults, RFC 7208 §4.6.4's 10 and 2 void.
  const dns = withinBudget(settings.resolver, settings.dnsBudget);
  const result = await authenticate(withDkimSignatureCap(raw, block), {
    ip: identity.clientIp,
    helo: identity.helo,
    sender: identity.mailFrom,
    mta: settings.authservId,
    resolver: dns.resolve,
    disableBimi: true,
  });
  const dmarc = result.dmarc;
  const dmarcWord = dmarc ? dmarc.status.result : "none";
  const rejects = dmarc !== false && dmarcWord === "fail" && dmarc.policy === "reject";
  const undecided = dns.ranOut() && (rejects || dmarcWord === "temperror");
  return {
    authentication: {
      spf: result.spf ? result.spf.status.result : "none",
      dkim: dkimWord(result),
      dmarc: dmarcWord,
      arc: result.arc ? result.arc.status.result : "none",
    },
    // mailauth puts Received-SPF first and Authentication-Results last; only the latter is kept.
    field: result.headers.slice(result.headers.indexOf("Authentication-Results:")),
    dmarcRejects: rejects && !undecided,
    dmarcUndecided: undecided,
  };
}

/** One word for all signatures: pass when any passes (RFC 6376 §6.1: each is judged alone). */
function dkimWord(result: AuthenticateResult): string {
  const words = (result.dkim.results ?? []).map((row) => row.status.result);
  if (words.includes("pass")) return "pass";
  return words[0] ?? "none";
}

/** The message as mailauth sees it: DKIM-Signature fields past the cap are left out. */
function withDkimSignatureCap(raw: Buffer, block: HeaderBlock): Buffer {
  let signatures = 0;
  return filterHeaderFields(raw, (field) => fieldName(field) !== "dkim-signature" || ++signatures <= MAX_DKIM_SIGNATURES, block);
}
