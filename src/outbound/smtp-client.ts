/**
 * One SMTP client connection (nodemailer's SMTPConnection) as promises, with each recipient's
 * answer read out of a transaction: accepted, refused for now (4xx), refused for good (5xx), or
 * no answer because the connection broke. A session carries several transactions in turn.
 */
import { isAscii } from "node:buffer";
import { isIP } from "node:net";
import SMTPConnection, { type SMTPConnectionEnvelope, type SMTPEnvelope } from "nodemailer/lib/smtp-connection";
import type { NodemailerError } from "nodemailer/lib/errors";
import { peerText } from "../net/peer-text";

export interface SessionTimeouts {
  /** TCP connection, greeting, STARTTLS and EHLO together. */
  connectMs: number;
  /** RFC 5321 §4.5.3.2.1: the 220 greeting. */
  greetingMs: number;
  /** The longest wait for any reply; §4.5.3.2.6 allows 10 minutes for the one after the data. */
  replyMs: number;
}

/** RFC 5321 §4.5.3.2 client timeouts; connecting gets Postfix's 30 s (the RFC sets none). */
export function rfc5321Timeouts(scale: number): SessionTimeouts {
  const minutes = (n: number) => Math.max(1, Math.round(n * 60_000 * scale));
  return { connectMs: minutes(0.5) + minutes(5), greetingMs: minutes(5), replyMs: minutes(10) };
}

export interface SessionOptions {
  /** The IP address to connect to. */
  address: string;
  port: number;
  /** The host's name: SNI, certificate checks and logs. */
  serverName: string;
  /** EHLO name (INBOXD_HOSTNAME). */
  clientName: string;
  timeouts: SessionTimeouts;
  /** "implicit": TLS from the first byte (smtps); "required": STARTTLS or no session; "opportunistic": STARTTLS when offered; "none": plaintext. */
  tls: "implicit" | "required" | "opportunistic" | "none";
  /** Check the certificate against serverName (relays, MX hosts under MTA-STS); other MX hosts are only encrypted opportunistically. */
  verifyCertificate: boolean;
  /** The CAs to check it against, when not only the system's (INBOXD_OUTBOUND_CA_FILE). */
  trustedCas?: string[];
  auth?: { user: string; pass: string };
}

/** The session could not be set up: connection, greeting, TLS, EHLO or AUTH failed. */
export class SessionSetupError extends Error {
  override readonly name = "SessionSetupError";
  constructor(
    message: string,
    /** nodemailer's code: ECONNECTION, ETIMEDOUT, ETLS, EAUTH, EPROTOCOL ... */
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

export interface RecipientAnswer {
  recipient: string;
  accepted: boolean;
  /** A refusal for good (5yz, RFC 5321 §4.2.1); false for 4yz and for no answer. */
  permanent: boolean;
  /** The server's reply, or what went wrong without one. */
  reply: string;
  /**
   * The reply refused this recipient's RCPT TO: the one reply that can say the address is bad. A
   * refused MAIL FROM or message data speaks of the sender or the message (RFC 5321 §3.3).
   */
  refusedAtRcpt: boolean;
}

export type TransactionResult =
  | { kind: "answered"; recipients: RecipientAnswer[] }
  /** No answer for the message: the connection broke or timed out during the transaction. */
  | { kind: "broken"; reason: string };

export interface SmtpSession {
  readonly serverName: string;
  readonly address: string;
  readonly secure: boolean;
  /** Still connected and between transactions. */
  readonly usable: boolean;
  send(from: string, recipients: string[], raw: Buffer): Promise<TransactionResult>;
  /** Ends the session politely (QUIT), or at once when it is already broken. */
  close(): void;
}

/** Errors that say nothing about the message: the connection itself failed. */
const CONNECTION_FAILURES = new Set(["ECONNECTION", "ETIMEDOUT", "ESOCKET", "ETLS", "EPROTOCOL", "EDNS", "ESTREAM"]);

export async function openSession(options: SessionOptions): Promise<SmtpSession> {
  // RFC 6066 §3: SNI carries host names only, never an address literal.
  const sni = isIP(options.serverName) ? undefined : options.serverName;
  const connection = new SMTPConnection({
    host: options.address,
    port: options.port,
    secure: options.tls === "implicit",
    requireTLS: options.tls === "required",
    ignoreTLS: options.tls === "none",
    opportunisticTLS: options.tls === "opportunistic",
    servername: sni,
    // Opportunistic TLS to an MX host: an encrypted session with an unverified certificate is still
    // better than plaintext (RFC 7435), and most MX certificates would not verify.
    tls: { rejectUnauthorized: options.verifyCertificate, servername: sni, ...(options.trustedCas ? { ca: options.trustedCas } : {}) },
    name: options.clientName,
    connectionTimeout: options.timeouts.connectMs,
    greetingTimeout: options.timeouts.greetingMs,
    socketTimeout: options.timeouts.replyMs,
    socketCloseTimeout: 1000,
    logger: false,
  });
  let broken = false;
  let busy = false;
  // An error outside a command (the peer resetting an idle connection) must not go unhandled.
  connection.on("error", () => (broken = true));
  connection.on("end", () => (broken = true));

  try {
    // nodemailer's timers are idle timers, which each byte restarts: a server that sent its EHLO
    // reply a byte every second held the session for as long as it liked. The set-up as a whole
    // gets connectMs on the clock.
    await withinMs(connection, options.timeouts.connectMs, "the session's set-up (connection, greeting, EHLO, STARTTLS)", async () => {
      await settled(connection, (done) => connection.connect(done));
      const auth = options.auth;
      if (auth) await settled(connection, (done) => connection.login({ user: auth.user, pass: auth.pass }, (error) => done(error ?? undefined)));
    });
  } catch (error) {
    // A STARTTLS handshake that failed, however it failed (an alert, a close, its timer), is ETLS:
    // the MX host is then tried once more in plaintext (./deliver.ts, RFC 7435). nodemailer says
    // ETLS only for a close, and ESOCKET or ETIMEDOUT otherwise.
    const upgrading = (connection as unknown as { upgrading?: boolean }).upgrading === true;
    connection.close();
    const failure = error as NodemailerError;
    throw new SessionSetupError(describe(failure), upgrading ? "ETLS" : failure.code);
  }

  const session: SmtpSession = {
    serverName: options.serverName,
    address: options.address,
    get secure() {
      return connection.secure;
    },
    get usable() {
      return !broken && !busy && !connection.destroyed;
    },
    async send(from, recipients, raw) {
      busy = true;
      // nodemailer keeps this object as the transaction's state and records each RCPT answer on it.
      const envelope: SMTPEnvelope & Partial<SMTPConnectionEnvelope> = { from, to: recipients, size: raw.length, use8BitMime: !isAscii(raw) }; // RFC 6152: 8-bit bytes go as BODY=8BITMIME
      try {
        const info = await withinMs(connection, transactionMs(options.timeouts, recipients.length, raw.length), "the transaction", () =>
          new Promise<{ accepted: string[]; rejectedErrors?: NodemailerError[]; response: string }>((resolve, reject) => connection.send(envelope, raw, (error, result) => (error ? reject(error) : resolve(result)))),
        );
        busy = false;
        return { kind: "answered", recipients: answersOf(recipients, info.rejectedErrors ?? [], { accepted: true, permanent: false, reply: peerText(info.response), refusedAtRcpt: false }) };
      } catch (error) {
        const failure = error as NodemailerError;
        if (failure.responseCode === undefined) {
          if (CONNECTION_FAILURES.has(failure.code ?? "")) {
            broken = true;
            return { kind: "broken", reason: describe(failure) };
          }
          // Refused before sending (RFC 1870 §6: larger than the server's SIZE), for good.
          busy = !(await resetSession(connection));
          return { kind: "answered", recipients: recipients.map((recipient) => ({ recipient, accepted: false, permanent: true, reply: localRefusal(failure), refusedAtRcpt: false })) };
        }
        const whole = { accepted: false, permanent: failure.permanent === true, reply: peerText(failure.response ?? failure.message), refusedAtRcpt: false };
        // A refused MAIL FROM refuses every recipient; otherwise those refused at RCPT keep their own answer.
        const perRecipient = failure.command === "MAIL FROM" ? [] : (failure.rejectedErrors ?? envelope.rejectedErrors ?? []);
        if (failure.responseCode === 421) broken = true;
        // The reply to the end of the data ends the transaction (RFC 5321 §4.1.1.4): nothing to
        // reset, and an RSET a server never answers would hold the outcome for the reply timeout.
        else if (failure.code === "EMESSAGE") busy = false;
        else busy = !(await resetSession(connection));
        return { kind: "answered", recipients: answersOf(recipients, perRecipient, whole) };
      }
    },
    close() {
      if (broken || connection.destroyed) connection.close();
      else connection.quit();
      broken = true;
    },
  };
  return session;
}

/**
 * The longest a transaction may take on the clock, its replies trickled a byte at a time within
 * nodemailer's idle timer: RFC 5321 §4.5.3.2's waits for MAIL (5 minutes), each RCPT (5), DATA (2)
 * and the reply to the data (10), and a minute per MiB for the data itself (§4.5.3.2.5 allows 3
 * minutes per block sent), all scaled as the other timeouts are.
 */
function transactionMs(timeouts: SessionTimeouts, recipients: number, bytes: number): number {
  const minute = timeouts.greetingMs / 5;
  return minute * (5 + 5 * recipients + 2 + Math.ceil(bytes / (1024 * 1024))) + timeouts.replyMs;
}

/** `work`, or the connection closed and a timeout once `ms` pass on the clock. */
async function withinMs<T>(connection: SMTPConnection, ms: number, what: string, work: () => Promise<T>): Promise<T> {
  let timer: Timer | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      connection.close();
      reject(Object.assign(new Error(`${what} took longer than ${Math.round(ms / 1000)} s`), { code: "ETIMEDOUT" }));
    }, ms);
  });
  try {
    return await Promise.race([work(), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs a set-up step. nodemailer reports its failures as 'error' events (a refused connection, a
 * timeout), or to the callback (a silent close, a refused login): whichever comes first settles it.
 */
function settled(connection: SMTPConnection, step: (done: (error?: NodemailerError) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => finish(error);
    const ended = () => finish(new SessionSetupError("the server closed the connection", "ECONNECTION"));
    const finish = (error?: Error) => {
      connection.removeListener("error", fail);
      connection.removeListener("end", ended);
      if (error) reject(error);
      else resolve();
    };
    connection.once("error", fail);
    connection.once("end", ended);
    step(finish);
  });
}

/**
 * RFC 5321 §4.1.1.5: RSET ends a transaction the server still holds open; false when the session
 * is unusable. A server may close right after its refusal, or never answer the RSET: nodemailer
 * then drops the RSET's callback and only reports the close or its reply timeout as an event, so
 * the RSET is settled as a set-up step is (the delivery and its lane waited for good before).
 */
function resetSession(connection: SMTPConnection): Promise<boolean> {
  if (connection.destroyed) return Promise.resolve(false);
  return settled(connection, (done) => connection.reset((error) => done(error ?? undefined))).then(
    () => true,
    () => false,
  );
}

function answersOf(recipients: string[], rejected: NodemailerError[], others: Omit<RecipientAnswer, "recipient">): RecipientAnswer[] {
  const byRecipient = new Map(rejected.filter((error) => error.recipient).map((error) => [error.recipient!, error]));
  return recipients.map((recipient) => {
    const refusal = byRecipient.get(recipient);
    if (!refusal) return { recipient, ...others };
    return { recipient, accepted: false, permanent: refusal.permanent === true, reply: peerText(refusal.response ?? refusal.message), refusedAtRcpt: true };
  });
}

function localRefusal(error: NodemailerError): string {
  return peerText(/size/i.test(error.message) ? `552 5.3.4 ${error.message} (the server's SIZE limit)` : `554 5.5.0 ${error.message}`);
}

function describe(error: NodemailerError): string {
  if (!error.response) return peerText(error.message);
  // nodemailer writes the reply into its message already, some twice ("Invalid greeting. response=<reply>: <reply>"): once is enough.
  const what = error.message.split(error.response)[0]!.replace(/[.:]? ?(response=)?$/, "");
  return peerText(`${what}: ${error.response}`);
}


