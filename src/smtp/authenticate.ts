// Sender authentication of one received message with mailauth: SPF for the connecting address and
// the MAIL FROM (or HELO) identity, every DKIM signature up to a cap, DMARC alignment and ARC.
import { domainToASCII } from "node:url";
import { authenticate, type AuthenticateResult, type DMARCResult, type DNSResolver } from "mailauth";
import { evaluateDmarc } from "mailauth/lib/dmarc";
import parseDkimHeaders from "mailauth/lib/parse-dkim-headers";
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

/**
 * `block`: raw's header block, when the caller has read it already. `shownAuthor`: the From
 * address the message will be shown with (the parser's), whose domain DMARC judges too.
 */
export async function authenticateMessage(
  raw: Buffer,
  identity: SmtpIdentity,
  settings: AuthenticationSettings,
  block = readHeaderBlock(raw),
  shownAuthor: Promise<string | undefined> = Promise.resolve(undefined),
): Promise<AuthenticationOutcome> {
  // mailauth's own time limit (maxElapsedTime) bounds SPF alone, and DKIM's key look-ups come
  // before SPF and DMARC's after: the budget is kept in the resolver they all ask. Its SPF look-up
  // limits stay at their defaults, RFC 7208 §4.6.4's 10 and 2 void.
  const dns = withinBudget(settings.resolver, settings.dnsBudget);
  const judge = (message: Buffer) =>
    authenticate(message, {
      ip: identity.clientIp,
      helo: identity.helo,
      sender: identity.mailFrom,
      mta: settings.authservId,
      resolver: dns.resolve,
      disableBimi: true,
      // RFC 8301 §3.1: rsa-sha1 MUST NOT be used for verifying; such a signature is dkim=policy.
      rejectRsaSha1: true,
    });
  let result = await judge(withSignaturesKept(raw, block));
  const partial = partialSignatures(result);
  // Judged again without them: DKIM and DMARC as if they were not there (one DNS budget for both).
  if (partial.length > 0) result = await judge(withSignaturesKept(raw, block, new Set(partial.map((signature) => signature.signature))));
  const judged = await dmarcOfEveryAuthor(result, await shownAuthor, dns.resolve);
  const { dmarcWord, rejects, added } = judged === tooManyAuthors ? tooManyAuthorsOutcome : dmarcOutcome(judged, result.dmarc);
  // Too many author domains is decided without a look-up, whatever the budget left.
  const undecided = judged !== tooManyAuthors && dns.ranOut() && (rejects || dmarcWord === "temperror");
  const { field, unplaced } = withPartialSignatures(withoutSealersClaims(result.headers.slice(result.headers.indexOf("Authentication-Results:"))), partial);
  const appended = [...unplaced, ...added];
  return {
    authentication: {
      spf: result.spf ? result.spf.status.result : "none",
      // The others' word, as if the partial ones were not there; theirs when there is no other.
      dkim: partial.length > 0 && dkimWord(result) === "none" ? "policy" : dkimWord(result),
      dmarc: dmarcWord,
      arc: result.arc ? result.arc.status.result : "none",
    },
    // mailauth puts Received-SPF first and Authentication-Results last; only the latter is kept.
    field: appended.length === 0 ? field : `${field.slice(0, -2)}${appended.join("")}\r\n`,
    dmarcRejects: rejects && !undecided,
    dmarcUndecided: undecided,
  };
}

/**
 * mailauth comments `arc=pass` with what the newest sealer said of its own checks (`i=1 spf=pass
 * dkim=pass dmarc=pass fromdomain=...`). A sender may seal a set of its own: its claims then read
 * as ours, in our field, beside our own `dmarc=fail`. The result stays; its comment goes.
 */
const withoutSealersClaims = (field: string) => field.replace(/(;\r\n )arc=pass \([^]*?\)(?=;\r\n |\r\n$)/, "$1arc=pass");

/**
 * The message's DMARC: the worst of its verdicts; refused when one fails under p=reject; the
 * verdicts mailauth did not write added to the Authentication-Results field.
 */
function dmarcOutcome(verdicts: DMARCResult[], mailauths: DMARCResult | false) {
  const weakest = verdicts.reduce<DMARCResult | undefined>((worst, verdict) => (worst && dmarcRank(worst) <= dmarcRank(verdict) ? worst : verdict), undefined);
  return {
    dmarcWord: weakest ? weakest.status.result : "none",
    rejects: verdicts.some((verdict) => verdict.status.result === "fail" && verdict.policy === "reject"),
    added: verdicts.filter((verdict) => verdict !== mailauths).map((verdict) => `;\r\n ${verdict.info}`),
  };
}

/** The DMARC results from worst to best: the message's is the worst of its author domains'. */
const dmarcRanks = ["fail", "temperror", "permerror", "none", "neutral", "pass"];
const dmarcRank = (verdict: DMARCResult) => {
  const rank = dmarcRanks.indexOf(verdict.status.result);
  return rank === -1 ? dmarcRanks.indexOf("none") : rank;
};

/** An author domain as DMARC looks it up: lower case, an A-label, without the root's dot. */
const authorDomainOf = (address: string | undefined) => {
  const domain = address?.slice(address.lastIndexOf("@") + 1).replace(/\.$/, "");
  return domain ? domainToASCII(domain) || undefined : undefined;
};

/**
 * Author domains judged per message: each costs DNS look-ups (its record, its organizational
 * domain's), and a From field of 3,000 domains asked 9,001 questions. Real mail names one.
 */
const MAX_AUTHOR_DOMAINS = 10;
const tooManyAuthors = Symbol("more author domains than are judged");

/** Past the author domains judged, none is: as if each had failed under p=reject. */
const tooManyAuthorsOutcome = {
  dmarcWord: "permerror",
  rejects: true,
  added: [`;\r\n dmarc=permerror (more than ${MAX_AUTHOR_DOMAINS} author domains)`],
};

/**
 * DMARC of every author domain, not only of the one mailauth judges. It judges none when the
 * From field names mailboxes of several domains, or comes twice (RFC 7489 §6.6.1: reject, or
 * judge each domain and apply the strictest policy; the latter here); and it reads the raw
 * addr-spec, which the parser shows decoded (encoded words, which RFC 2047 §5 forbids there; an
 * xn-- label that is no A-label), so the address shown could name a domain never judged. A spoof
 * of a p=reject domain was stored dmarc=none, and let through under INBOXD_DMARC_ENFORCE.
 */
async function dmarcOfEveryAuthor(result: AuthenticateResult, shownAuthor: string | undefined, resolver: DNSResolver): Promise<DMARCResult[] | typeof tooManyAuthors> {
  const judged = result.dmarc ? [result.dmarc] : [];
  const domains = new Set<string>();
  if (!result.dmarc && result.dkim.headerFrom.length > 0) {
    const { authorDomains = [] } = await evaluateDmarc({ headerFrom: result.dkim.headerFrom, fromFields: result.dkim.fromFields, resolver });
    for (const domain of authorDomains) domains.add(authorDomainOf(`@${domain}`)!);
  }
  const shownDomain = authorDomainOf(shownAuthor);
  if (shownDomain) domains.add(shownDomain);
  for (const verdict of judged) domains.delete(authorDomainOf(`@${verdict.status.header?.from ?? ""}`)!);
  if (domains.size > MAX_AUTHOR_DOMAINS) return tooManyAuthors;
  const spfDomains = result.spf && result.spf.status.result === "pass" && result.spf.domain ? [result.spf.domain] : [];
  const dkimDomains = (result.dkim.results ?? []).flatMap((row) =>
    row.status.result === "pass" && row.signingDomain ? [{ id: row.id, domain: row.signingDomain, aligned: row.status.aligned, underSized: row.status.underSized }] : [],
  );
  for (const domain of domains) {
    const { response } = await evaluateDmarc({ headerFrom: `postmaster@${domain}`, fromFields: 1, spfDomains, dkimDomains, arcResult: result.arc || undefined, resolver });
    if (response) judged.push(response);
  }
  return judged;
}

/** One word for all signatures: pass when any passes (RFC 6376 §6.1: each is judged alone). */
function dkimWord(result: AuthenticateResult): string {
  const words = (result.dkim.results ?? []).map((row) => row.status.result);
  if (words.includes("pass")) return "pass";
  return words[0] ?? "none";
}

/** mailauth's entry for a message without a signature it verified. */
const NOT_SIGNED = "dkim=none (message not signed)";

/** The partial signatures' entries in place of NOT_SIGNED; else `unplaced`, to be added after the others. */
function withPartialSignatures(field: string, partial: PartialSignature[]): { field: string; unplaced: string[] } {
  const entries = partial.map((signature) => `dkim=policy (signed part of the body only: ${signature.unsigned} bytes unsigned) header.d=${signature.domain}`);
  if (entries.length === 0 || !field.includes(NOT_SIGNED)) return { field, unplaced: entries.map((entry) => `;\r\n ${entry}`) };
  return { field: field.replace(NOT_SIGNED, entries.join(";\r\n ")), unplaced: [] };
}

type PartialSignature = { signature: string; domain: string; unsigned: number };

/**
 * Passing signatures whose body length (`l=`) leaves part of the body unsigned. Content appended
 * after the signed part (a whole body under `l=0`) read as the signer's: dkim=pass and an
 * aligned DMARC pass over text the domain never signed (RFC 6376 §8.2). They count as no
 * signature (dkim=policy, RFC 8601 §2.7.1), as the mailbox providers that ignore `l=` do.
 */
function partialSignatures(result: AuthenticateResult): PartialSignature[] {
  return (result.dkim.results ?? []).flatMap((row) =>
    row.status.result === "pass" && row.status.underSized && row.signature ? [{ signature: row.signature, domain: row.signingDomain ?? "", unsigned: row.status.underSized }] : [],
  );
}

/**
 * The message as mailauth sees it: DKIM-Signature fields past the cap are left out, and those
 * whose signature (`b=`, as mailauth's verifier reads the field) is in `without`: a signature
 * is its own, where a body hash may be shared by another over the same body.
 */
function withSignaturesKept(raw: Buffer, block: HeaderBlock, without = new Set<string>()): Buffer {
  let signatures = 0;
  const signatureOf = (field: string) => String(parseDkimHeaders(field).parsed?.b?.value ?? "");
  return filterHeaderFields(raw, (field) => fieldName(field) !== "dkim-signature" || (++signatures <= MAX_DKIM_SIGNATURES && (without.size === 0 || !without.has(signatureOf(field)))), block);
}
