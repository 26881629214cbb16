/**
 * One try of one job: the due recipients of one message at one destination domain, prepared
 * (checked and signed), then sent in one SMTP transaction over the first MX host (or the relay)
 * that answers. Returns each recipient's outcome; recording it is the queue's job (outcome.ts).
 */
import type { App } from "../app";
import type { Resolver } from "../dns/resolver";
import { parseAddress } from "../mail/address";
import type { QueuedDelivery } from "../store";
import type { Relay } from "./relay";
import { returnPathFor } from "./return-path";
import { hopAddresses, mxHops, screenAddresses, TemporaryRouteError, UndeliverableDomainError, type Hop } from "./route";
import type { Signer } from "./sign-pool";
import { NoSigningKeyError, signOutgoing, type SigningKeys } from "./signing";
import { openSession, rfc5321Timeouts, SessionSetupError, type RecipientAnswer, type SessionOptions, type SmtpSession } from "./smtp-client";
import { suppressionRefusal } from "./suppressions";
import { enforcedHops, outboundCas, recipientPolicy } from "./mta-sts";

export interface Job {
  messageId: string;
  domain: string;
  /** `attempts` counts this try. */
  deliveries: QueuedDelivery[];
}

export type OutcomeKind = "delivered" | "bounced" | "rejected" | "deferred";

export interface RecipientOutcome {
  delivery: QueuedDelivery;
  kind: OutcomeKind;
  /** The server's reply, or why there was none. */
  reply: string;
  /** The host that answered, as `name [address]`, when one did. */
  host?: string;
  /** It refused the recipient at RCPT TO: only such a refusal may suppress the address. */
  refusedAtRcpt?: boolean;
}

export interface DeliveryContext {
  app: App;
  resolver: Resolver;
  signer: Signer;
  keys: SigningKeys;
  relay?: Relay;
  random: () => number;
}

// MX answers are kept this long for the jobs of one lane (RFC 1035 TTLs are not exposed by the
// resolver; a minute bounds how stale a route can be without asking DNS for every message).
const ROUTE_CACHE_MS = 60_000;

/** What a lane keeps between the jobs it runs for one domain: the route and the open SMTP session. */
export class Destination {
  readonly sessions = new SessionHolder();
  private route?: { hops: Hop[]; until: number };

  constructor(
    private readonly context: DeliveryContext,
    readonly domain: string,
  ) {}

  /** The hosts to try in order; throws UndeliverableDomainError or TemporaryRouteError. */
  async hops(): Promise<Hop[]> {
    const { app, relay, resolver, random } = this.context;
    if (relay) return [{ name: relay.host, port: relay.port }];
    const now = app.clock.now();
    if (this.route && this.route.until > now) return this.route.hops;
    const hops = enforcedHops(await mxHops(resolver, this.domain, app.config.outboundPort, random), await recipientPolicy(app, resolver, this.domain));
    this.route = { hops, until: now + ROUTE_CACHE_MS };
    return hops;
  }

  close() {
    this.sessions.close();
  }
}

/** The SMTP session a lane keeps open between jobs, so that several messages share one connection. */
export class SessionHolder {
  private session?: SmtpSession;

  /** Whether the open session's certificate was verified (MTA-STS hops take no other). */
  private verified = false;

  /** The open session when it goes to one of `hops`, first in the order to try. */
  reusableFor(hops: Hop[]): SmtpSession | undefined {
    const open = this.session;
    if (!open?.usable) return undefined;
    return hops.some((hop) => hop.name === open.serverName && (this.verified || !hop.verifiedTls)) ? open : undefined;
  }

  keep(session: SmtpSession, verified: boolean) {
    if (this.session !== session) this.close();
    this.session = session;
    this.verified = verified;
  }

  close() {
    this.session?.close();
    this.session = undefined;
  }
}

/**
 * A job made ready to send: the recipients that cannot be tried already have their outcome, the
 * others wait with the signed message. Made as soon as the job is claimed, so that signing runs
 * ahead of the connection instead of between two of its transactions.
 */
export type PreparedJob =
  | { kind: "settled"; outcomes: RecipientOutcome[] }
  | { kind: "ready"; outcomes: RecipientOutcome[]; pending: { delivery: QueuedDelivery; address: string }[]; signed: Buffer };

export async function prepareJob(context: DeliveryContext, job: Job): Promise<PreparedJob> {
  const { app } = context;
  const message = await app.store.deliveries.sendable(job.messageId);
  if (!message) return { kind: "settled", outcomes: [] }; // deleted while queued: its deliveries went with it
  const outcomes: RecipientOutcome[] = [];
  const pending: { delivery: QueuedDelivery; address: string }[] = [];
  for (const delivery of job.deliveries) {
    if (delivery.acceptedReply !== null) {
      outcomes.push({ delivery, kind: "delivered", reply: delivery.acceptedReply });
      continue;
    }
    const refusal = await refusalOf(app, delivery);
    if (typeof refusal === "string") outcomes.push({ delivery, kind: "rejected", reply: refusal });
    else pending.push({ delivery, address: refusal.address });
  }
  if (pending.length === 0) return { kind: "settled", outcomes };
  try {
    const signed = await signOutgoing(context.keys, context.signer, message.from, message.raw, app.clock.date());
    return { kind: "ready", outcomes, pending, signed };
  } catch (error) {
    if (!(error instanceof NoSigningKeyError)) throw error;
    return { kind: "settled", outcomes: outcomes.concat(pending.map(({ delivery }) => ({ delivery, kind: "rejected", reply: `rejected: ${error.message}` }))) };
  }
}

/**
 * Sends a prepared job over the lane's destination: one transaction with every recipient waiting.
 * `stillClaimed` is asked with a session ready, just before the transaction: a job whose
 * deliveries were deleted or taken over by another node since its claim is not sent, and its
 * waiting recipients get no outcome here (they are no longer this lane's to record).
 */
export async function transmitJob(context: DeliveryContext, prepared: PreparedJob, destination: Destination, stillClaimed: () => Promise<boolean>): Promise<RecipientOutcome[]> {
  if (prepared.kind === "settled") return prepared.outcomes;
  const { outcomes, pending, signed } = prepared;
  const all = (kind: OutcomeKind, reply: string) => outcomes.concat(pending.map(({ delivery }) => ({ delivery, kind, reply })));
  let hops: Hop[];
  try {
    hops = await destination.hops();
  } catch (error) {
    if (error instanceof UndeliverableDomainError) return all("rejected", `rejected: ${error.message}`);
    if (error instanceof TemporaryRouteError) return all("deferred", error.message);
    throw error;
  }

  // RFC 5321 §3.3: one transaction, one reverse-path; each RCPT is exactly a recipient of a delivery.
  const envelopeRecipients = [...new Set(pending.map((entry) => entry.address))];
  const returnPath = returnPathFor(context.app, pending[0]!.delivery.id);
  const transaction = await sendOverHops(context, destination.sessions, hops, { from: returnPath, recipients: envelopeRecipients, signed, stillClaimed });
  if (transaction.kind === "withdrawn") return outcomes;
  if (transaction.kind === "failed") return all("deferred", transaction.reason);
  if (transaction.kind === "refused") return all("rejected", `rejected: ${transaction.reason}`);
  const answers = new Map(transaction.answers.map((answer) => [answer.recipient, answer]));
  return outcomes.concat(
    pending.map(({ delivery, address }) => {
      const answer = answers.get(address)!;
      const kind = answer.accepted ? "delivered" : answer.permanent ? "bounced" : "deferred";
      return { delivery, kind, reply: answer.reply, host: transaction.host, refusedAtRcpt: answer.refusedAtRcpt };
    }),
  );
}

/** A reason to reject without trying (suppressed or unusable address), else the address to use in RCPT TO. */
async function refusalOf(app: App, delivery: QueuedDelivery): Promise<string | { address: string }> {
  // Checked again here: the address may have been suppressed while the delivery waited.
  const suppressed = await suppressionRefusal(app.store, delivery.organizationId, delivery.recipient);
  if (suppressed) return suppressed;
  // The same parser that admitted the address: no CR, LF or other control character reaches a command line.
  const parsed = parseAddress(delivery.recipient);
  if (!parsed) return `rejected: ${JSON.stringify(delivery.recipient)} is not a deliverable address`;
  return { address: parsed.address };
}

/** `refused`: no host had an address inboxd may connect to, and none may get one later (no DNS failure). */
type HopsResult = { kind: "answered"; answers: RecipientAnswer[]; host: string } | { kind: "failed"; reason: string } | { kind: "refused"; reason: string } | { kind: "withdrawn" };

/** One transaction's envelope and message, and the look that it is still this lane's to send. */
interface SmtpTransaction {
  from: string;
  recipients: string[];
  signed: Buffer;
  stillClaimed: () => Promise<boolean>;
}

/**
 * Tries the hosts in order, each of their allowed addresses in turn, until one takes the
 * transaction (RFC 5321 §5.1). A host that cannot be reached or will not talk moves on to the
 * next; once a server answered the transaction, its answer stands.
 */
async function sendOverHops(context: DeliveryContext, sessions: SessionHolder, hops: Hop[], transaction: SmtpTransaction): Promise<HopsResult> {
  const { from, recipients, signed, stillClaimed } = transaction;
  // The relay is the operator's choice, wherever it is; MX hosts are the recipients' domain's.
  const allowPrivate = context.relay !== undefined || context.app.config.outboundAllowPrivate;
  const failures: string[] = [];
  const refusals: string[] = [];
  // A refused address makes the recipients rejected only when nothing else was possible: no
  // connection tried, and no look-up that failed for now and may give an allowed address later.
  let connectionTried = false;
  let lookupFailed = false;
  const open = sessions.reusableFor(hops);
  if (open) {
    if (!(await stillClaimed())) return { kind: "withdrawn" };
    const result = await open.send(from, recipients, signed);
    if (result.kind === "answered") return { kind: "answered", answers: result.recipients, host: `${open.serverName} [${open.address}]` };
    // A cached connection the server dropped meanwhile says nothing about the message: reconnect.
    failures.push(`${open.serverName} [${open.address}]: ${result.reason}`);
  }
  for (const hop of hops) {
    let addresses: string[];
    try {
      addresses = await hopAddresses(context.resolver, hop);
    } catch (error) {
      failures.push(`${hop.name}: ${(error as Error).message}`);
      lookupFailed = true;
      continue;
    }
    if (addresses.length === 0) failures.push(`${hop.name}: no address`);
    const { allowed, refused } = screenAddresses(addresses, allowPrivate);
    if (refused.length > 0) refusals.push(`${hop.name} resolves to a private, loopback, link-local or reserved address (${refused.join(", ")})`);
    for (const address of allowed) {
      connectionTried = true;
      let session: SmtpSession;
      try {
        session = await connect(context, hop, address);
      } catch (error) {
        failures.push(`${hop.name} [${address}]: ${(error as Error).message}`);
        continue;
      }
      sessions.keep(session, hop.verifiedTls === true);
      if (!(await stillClaimed())) return { kind: "withdrawn" };
      const result = await session.send(from, recipients, signed);
      if (result.kind === "answered") return { kind: "answered", answers: result.recipients, host: `${hop.name} [${address}]` };
      return { kind: "failed", reason: `${hop.name} [${address}]: ${result.reason}` };
    }
  }
  if (refusals.length > 0 && !connectionTried && !lookupFailed) return { kind: "refused", reason: `no mail server of this domain may be connected to: ${firstFew(refusals.concat(failures))}` };
  return { kind: "failed", reason: `no mail server could be reached: ${firstFew(failures.concat(refusals))}` };
}

/** The first five hosts' failures, and how many more: a domain of ten MX hosts, each greeting with a 1 MiB refusal, kept 10 MB for one recipient. */
const firstFew = (reasons: string[]) => reasons.slice(0, 5).join("; ") + (reasons.length > 5 ? `; and ${reasons.length - 5} more` : "");

/**
 * A session to one address; an MX host whose STARTTLS handshake fails is tried once more in
 * plaintext, as opportunistic TLS allows (RFC 7435 §3), unless the domain's MTA-STS policy
 * enforces TLS with a valid certificate (RFC 8461 §4.2): then there is no session.
 */
async function connect(context: DeliveryContext, hop: Hop, address: string): Promise<SmtpSession> {
  const { config } = context.app;
  const relay = context.relay;
  const options: SessionOptions = {
    address,
    port: hop.port,
    serverName: hop.name,
    clientName: config.hostname,
    timeouts: rfc5321Timeouts(config.smtpClientTimeoutScale),
    tls: relay ? relay.tls : hop.verifiedTls ? "required" : "opportunistic",
    verifyCertificate: relay ? relay.verifyCertificate : hop.verifiedTls === true,
    trustedCas: outboundCas(context.app),
    auth: relay?.auth,
  };
  try {
    return await openSession(options);
  } catch (error) {
    if (hop.verifiedTls && error instanceof SessionSetupError) throw new SessionSetupError(`MTA-STS (enforce) requires TLS with a certificate valid for ${hop.name}: ${error.message}`, error.code);
    if (relay || !(error instanceof SessionSetupError) || error.code !== "ETLS") throw error;
    return openSession({ ...options, tls: "none" });
  }
}
