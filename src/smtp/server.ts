// The inbound SMTP server (RFC 5321), the MX of every hosted domain: ESMTP with SIZE, 8BITMIME,
// SMTPUTF8, PIPELINING, STARTTLS and ENHANCEDSTATUSCODES; recipient policy at RCPT; messages
// committed in groups before their 250, then analysed on worker threads by the inbound queue. No
// AUTH: this is not a submission service.
import { Counts } from "../counts";
import { domainToASCII, domainToUnicode } from "node:url";
import type { AddressInfo } from "node:net";
import type { SMTPServerAddress, SMTPServerSession } from "smtp-server";
import type { App } from "../app";
import { listenError } from "../config";
import { refusalRun } from "../log";
import { discard } from "../memory/in-flight";
import { normalizeAddress } from "../mail/address";
import type { RunningPart } from "../running-part";
import { peerGroup } from "../net/peer-group";
import { createAnalysisPool } from "./analysis-pool";
import { InboundPace, startInboundQueue } from "./inbound-queue";
import { InboxdSmtpServer, wasSentInUtf8 } from "./inboxd-server";
import { memorySpentClosing, memorySpentReply, readMessageData, receiveMessage, type Receiver, type Recipient } from "./receive";
import { routeRecipient } from "./recipients";
import { SmtpReply } from "./replies";
import { driverReason, isStoreFailing, isStoreFull, isStoreUnavailable } from "../store/unavailable";
import type { ServedCertificates } from "../certs/served";

/** RFC 5321 §4.5.3.1.8: a server must accept at least 100 recipients per message; more get 452. */
const MAX_RECIPIENTS = 100;
/**
 * Refused recipients after which a session is closed (421 4.7.0), as Postfix's
 * smtpd_hard_error_limit: each 550 tells a harvester that one address does not exist, and
 * without a bound one connection could try a dictionary of them (20,000 in 0.4 s). Counted since
 * the session's last accepted message, so that a connection reused for many is not cut off by
 * the stale addresses of its mailing list.
 */
const MAX_REFUSED_RECIPIENTS = 20;
/** RFC 5321 §4.5.3.1.4: a command line is at most 512 octets with its CRLF. */
const MAX_COMMAND_LENGTH = 510;
/** Where port 25 may not be bound (not root, no CAP_NET_BIND_SERVICE). */
const FALLBACK_PORT = 2525;
/** How often shutdown looks for sessions that have finished their message. */
const SHUTDOWN_POLL_MS = 20;
/**
 * How long a shutdown waits past its deadline for the messages whose data had all come: they are
 * being committed, and a 421 now would have their senders send again what is stored.
 */
const COMMIT_GRACE_MS = 5000;

// Socket errors that only mean a client went away or stalled.
const QUIET_ERRORS = new Set(["ECONNRESET", "EPIPE", "ETIMEDOUT", "ERR_TLS_HANDSHAKE_TIMEOUT", "SocketError"]);

/** `certificates`: STARTTLS takes the mail host's, and a renewed one for the next connections. */
export async function startSmtp(app: App, certificates: ServedCertificates): Promise<RunningPart> {
  const { config, log } = app;
  const analysis = createAnalysisPool({ workers: config.smtpWorkers, authservId: config.hostname, dnsServers: config.dnsServers, timeoutMs: config.smtpAnalysisTimeoutMs, log });
  const receiver: Receiver = { app, analysis, pace: new InboundPace() };
  const recipients = new WeakMap<SMTPServerAddress, Recipient>();
  /** Sessions whose message has all come and is not answered yet. */
  const answering = new Set<string>();
  /** The shutdown has cut off every other session with a 421: a message whose data ends after it is not taken. */
  let cutOff = false;
  const tallies = new Map<string, SessionTally>();
  /** What happened to one message (or one refused recipient) of a session, for its log line and the metrics. */
  const tally = (session: SMTPServerSession, outcome: "accepted" | number) => {
    const counts = tallies.get(session.id);
    if (counts && outcome === "accepted") {
      counts.accepted++;
      // As Postfix counts its hard error limit: the errors made without delivering mail.
      counts.refusedRecipients = 0;
    } else if (counts && outcome !== "accepted") counts.refused.increment(String(outcome));
    app.metrics.smtpMessages.inc({ outcome: String(outcome) });
  };
  /** A refusal of the message at MAIL or RCPT, counted as any other. */
  const tallied = (session: SMTPServerSession, refusal: SmtpReply) => (tally(session, refusal.responseCode), refusal);
  const { cert, key } = certificates.primary;

  const server = new InboxdSmtpServer(
    {
      name: config.hostname,
      logger: false,
      key,
      cert,
      disabledCommands: ["AUTH"],
      hideENHANCEDSTATUSCODES: false,
      size: config.smtpMaxSize,
      maxRecipients: MAX_RECIPIENTS,
      maxCommandLength: MAX_COMMAND_LENGTH,
      socketTimeout: config.smtpIdleTimeoutMs,
      // smtp-server's own cut-off (a 421 to every session) comes after ours (stop, below), which
      // spares the sessions whose message is being committed.
      closeTimeout: config.shutdownTimeoutMs + COMMIT_GRACE_MS + 1000,
      // A PTR name would only decorate the Received field, at the cost of a look-up before each greeting.
      disableReverseLookup: true,
      onConnect(session, callback) {
        app.metrics.smtpConnections.inc();
        tallies.set(session.id, { accepted: 0, refused: new Counts(), refusedRecipients: 0 });
        callback();
      },
      onClose(session) {
        const counts = tallies.get(session.id);
        tallies.delete(session.id);
        if (!counts) return;
        app.log.info("smtp session", {
          peer: session.remoteAddress,
          ehlo: session.hostNameAppearsAs || null,
          tls: session.tlsOptions ? session.tlsOptions.version : "none",
          accepted: counts.accepted,
          refused: counts.refused.total(),
          ...(counts.refused.total() ? { codes: counts.refused.describe() } : {}),
        });
      },
      onRcptTo(address, session, callback) {
        const refusal = unsupportedParameter(address, session, []) ?? addressEncodingRefusal(address, usesSmtpUtf8(session.envelope.mailFrom), "5.1.3");
        if (refusal) return callback(tallied(session, refusal));
        routeRecipient(app, address.address, session.envelope.mailFrom ? session.envelope.mailFrom.address : "").then(
          (target) => {
            recipients.set(address, { address: normalizeAddress(address.address) ?? address.address, target });
            log.debug("smtp rcpt accepted", { session: session.id, target: target.kind });
            callback();
          },
          (error: unknown) => {
            // Anything but a policy refusal is temporary: smtp-server would send a bare Error as a 550.
            const reply = replyFor(app, error, session.remoteAddress);
            tally(session, reply.responseCode);
            log.debug("smtp rcpt refused", { session: session.id, error: reply.message });
            callback(reply);
            const counts = tallies.get(session.id);
            if (counts && reply.responseCode >= 500 && ++counts.refusedRecipients >= MAX_REFUSED_RECIPIENTS) server.closeConnection(session.id, `4.7.0 ${config.hostname} Too many refused recipients, closing connection`);
          },
        );
      },
      // RFC 1870 §6.1: a declared SIZE that the message memory cannot take now is a 452 before any
      // data is sent. Nothing is held until the data comes: a client that declared sizes and sent
      // nothing held the memory every sender shares, two MAIL FROMs a minute refusing all mail.
      onMailFrom(address, session, callback) {
        const refusal = unsupportedParameter(address, session, MAIL_PARAMETERS) ?? addressEncodingRefusal(address, usesSmtpUtf8(address), "5.1.7");
        if (refusal) return callback(tallied(session, refusal));
        const declared = declaredSize(address);
        if (declared > 0 && !app.messageMemory.fits(Math.min(declared, config.smtpMaxSize), peerGroup(session.remoteAddress))) {
          app.metrics.memoryDeferrals.inc({ protocol: "smtp" });
          tally(session, memorySpentReply.responseCode);
          return callback(memorySpentReply);
        }
        callback();
      },
      onData(stream, session, callback) {
        const accepted = session.envelope.rcptTo.map((address) => recipients.get(address)!);
        log.debug("smtp data", { session: session.id, peer: session.remoteAddress, mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "", recipients: accepted.length });
        // Counted against the client, as the connection cap counts it (../net/peer-group.ts): one
        // client's transfers hold at most half the memory, so a peer that stalls them defers only its own mail.
        const memory = app.messageMemory.open(peerGroup(session.remoteAddress));
        // The data goes into one buffer of the declared size when the memory covers it now; else it is counted as it arrives.
        const declared = session.envelope.mailFrom ? declaredSize(session.envelope.mailFrom) : 0;
        const exactSize = declared > 0 && declared <= config.smtpMaxSize && memory.cover(declared) ? declared : 0;
        // The memory is held until the reply: the message is in this process until it is committed.
        // Nothing reads a message's bytes after its reply (stored, handed to the inbound queue on
        // disk, or refused): they are freed here, which spares the collection the release would
        // cause, 80-120 ms of the event loop after each large message (../memory/in-flight discard).
        // Without them (the client left mid-data), the release leaves that collection behind.
        const answer = (error: Error | null, text?: string, raw?: Buffer) => {
          answering.delete(session.id);
          if (raw) discard([raw]);
          memory.release({ collect: !raw });
          callback(error, text);
        };
        const memorySpent = () => {
          app.metrics.memoryDeferrals.inc({ protocol: "smtp" });
          tally(session, 421);
          server.closeConnection(session.id, memorySpentClosing);
        };
        readMessageData(stream, config.smtpMaxSize, memory, memorySpent, exactSize).then(
          (data) => {
            // Its session was told 421 already: nothing was acknowledged, and the sender sends it again.
            if (cutOff) return answer(new Error("cut off by the shutdown"));
            answering.add(session.id);
            return receiveMessage(receiver, session, accepted, data).then(
              (text) => {
                tally(session, "accepted");
                answer(null, text, data.raw);
              },
              (error) => {
                const reply = replyFor(app, error, session.remoteAddress);
                tally(session, reply.responseCode);
                answer(reply, undefined, data.raw);
              },
            );
          },
          // The client left in the middle of the data: there is no one to answer.
          (error: Error) => answer(error),
        );
      },
    },
    {
      greetingDelayMs: config.smtpGreetingDelayMs,
      maxConnections: config.smtpMaxConnections,
      maxConnectionsPerIp: config.smtpMaxConnectionsPerIp,
      dataTimeoutMs: config.smtpDataTimeoutMs,
      commandTimeoutMs: config.smtpCommandTimeoutMs,
      sessionTimeoutMs: config.smtpSessionTimeoutMs,
    },
  );
  // Without a listener, one failed TLS handshake would end the process. Until the server listens,
  // its errors are the listen's own, which startSmtp reports.
  let listening = false;
  server.on("error", (error: Error & { code?: string; remoteAddress?: string }) => {
    if (!listening) return;
    const fields = { error: error.message, code: error.code, remoteAddress: error.remoteAddress };
    if (QUIET_ERRORS.has(error.code ?? "")) log.debug("smtp connection error", fields);
    else log.warn("smtp connection error", fields);
  });

  // A renewed certificate serves the next STARTTLS; sessions under way keep theirs.
  const stopTakingCertificates = certificates.onChange(() => server.updateSecureContext(certificates.primary));

  let port: number;
  try {
    port = await listenWithFallback(app, server);
    listening = true;
  } catch (error) {
    stopTakingCertificates();
    analysis.close();
    throw listenError(error, "INBOXD_SMTP_PORT", config.bind, config.smtpPort);
  }
  const inbound = startInboundQueue(app, analysis, config.smtpWorkers, receiver.pace);
  return {
    name: "smtp",
    address: { host: config.bind, port },
    async stop() {
      stopTakingCertificates();
      // No new connections; sessions between messages get 421 now, the others once their message is answered.
      server.close();
      const deadline = performance.now() + app.shutdown.remainingMs();
      const isAnswering = (sessionId: string) => answering.has(sessionId);
      while (server.closeIdleConnections(isAnswering) > 0 && performance.now() < deadline) await Bun.sleep(SHUTDOWN_POLL_MS);
      // Sessions still sending a message are cut off; those whose message is being committed get their answer first.
      cutOff = true;
      server.closeAllConnections(isAnswering);
      while (answering.size > 0 && performance.now() < deadline + COMMIT_GRACE_MS) await Bun.sleep(SHUTDOWN_POLL_MS);
      server.closeAllConnections();
      // What was accepted is analysed within what is left of the shutdown time; the rest after the next start.
      const drained = inbound.runDueNow().catch((error: unknown) => log.error("smtp: analysing the accepted messages before stopping failed", { error }));
      await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - performance.now())).unref())]);
      await inbound.stop();
      analysis.close();
    },
  };
}

/**
 * `refused`: per reply code, not a code per refusal: a session refused message after message
 * (a NUL in each, for 30 minutes) grew a list, and its log line, by 4 bytes a message.
 */
type SessionTally = { accepted: number; refused: Counts; refusedRecipients: number };

/** RFC 1870 §3: the SIZE a client declared at MAIL FROM; 0 when none. */
const declaredSize = (address: SMTPServerAddress) => Number((address.args || {}).SIZE ?? 0) || 0;

/** The MAIL FROM parameters of the extensions EHLO offers: SIZE (RFC 1870), BODY (RFC 6152), SMTPUTF8 (RFC 6531); RCPT TO takes none (no DSN). */
const MAIL_PARAMETERS = ["SIZE", "BODY", "SMTPUTF8"];

/**
 * RFC 5321 §4.1.1.11: a parameter of an extension the server did not offer (or any, after HELO,
 * which offers none) is refused with 555, rather than accepted and ignored: a client asking for
 * DSN notifications (NOTIFY, RET) is told it will get none.
 */
function unsupportedParameter(address: SMTPServerAddress, session: SMTPServerSession, offered: string[]): SmtpReply | undefined {
  const allowed = session.transmissionType.startsWith("E") ? offered : [];
  const unsupported = Object.keys(address.args || {}).find((key) => !allowed.includes(key));
  // RFC 5321 §4.2: reply text is printable ASCII, and the name is the client's.
  return unsupported === undefined ? undefined : new SmtpReply(555, "5.5.4", `Unsupported parameter ${unsupported.replace(/[^\x21-\x7e]/g, "?")}`);
}

/** Whether the transaction's MAIL FROM carries SMTPUTF8 (RFC 6531 §3.4). */
const usesSmtpUtf8 = (mailFrom: SMTPServerAddress | false) => mailFrom !== false && (mailFrom.args as Record<string, unknown>).SMTPUTF8 === true;

/**
 * RFC 5321 §4.1.2: without SMTPUTF8 an address is ASCII, its domain in A-labels; with it, UTF-8
 * (RFC 6531 §3.3). Bytes that are not UTF-8 reach the server as U+FFFD, and would be stored so:
 * the sender shown would not be the one sent. What was sent is judged by the command line
 * (wasSentInUtf8): smtp-server shows an IDN domain's A-labels as U-labels.
 * `syntaxStatus`: 5.1.7 for the sender, 5.1.3 for a recipient (RFC 3463).
 */
function addressEncodingRefusal(address: SMTPServerAddress, smtpUtf8: boolean, syntaxStatus: "5.1.7" | "5.1.3"): SmtpReply | undefined {
  if (address.address.includes("\ufffd")) return new SmtpReply(501, syntaxStatus, "Bad address syntax: not UTF-8");
  const at = address.address.lastIndexOf("@");
  if (at >= 0 && !isHostName(address.address.slice(at + 1))) return new SmtpReply(501, syntaxStatus, "Bad address syntax: the domain is no host name");
  return smtpUtf8 || !wasSentInUtf8(address) ? undefined : new SmtpReply(553, "5.6.7", "A non-ASCII address needs the SMTPUTF8 parameter of MAIL (RFC 6531 section 3.4)");
}

/**
 * A domain as smtp-server hands it on (A-labels in lower case turned into U-labels): one IDNA takes
 * (RFC 5890 §2.3.2.1), every label there. An A-label that decodes to nothing became
 * `x@.blocked.example`, past a block of `blocked.example`; one in capitals (`XN--...`), which
 * smtp-server leaves as it is, IDNA refuses the same way when it is not one. Address literals
 * (`[192.0.2.1]`) are left to the recipient policy.
 */
function isHostName(domain: string): boolean {
  if (domain.startsWith("[")) return true;
  const ascii = domainToASCII(domain);
  if (ascii === "") return false;
  // Each label as IDNA takes it, unmapped (RFC 5891 §5.4: DISALLOWED code points are refused, not
  // mapped): UTS-46 maps full-width letters, U+00AD and U+017F onto ASCII, so that an A-label of
  // them (`xn--ni7cenug8c`, which smtp-server decoded) named a hosted domain that DNS knows as another.
  const labels = domain.split(".");
  const asciiLabels = ascii.split(".");
  return (
    labels.length === asciiLabels.length &&
    asciiLabels.every((asciiLabel, i) => asciiLabel !== "" && (/^[\x00-\x7f]*$/.test(labels[i]!) ? asciiLabel === labels[i]!.toLowerCase() : caseFolded(domainToUnicode(asciiLabel)) === caseFolded(labels[i]!)))
  );
}

/**
 * A label compared without its case, on both sides: IDNA folds Cherokee small letters to capitals
 * and Σ to σ where JavaScript lowers capitals and writes a word's last Σ as ς.
 */
const caseFolded = (label: string) => label.normalize("NFC").toLowerCase().replace(/ς/g, "σ");

/** Messages refused while the database is out of reach, or its storage failing: the first logged, then one line a minute with their count. */
const unreachable = refusalRun();
const storageFailing = refusalRun();

/** The reply to a message that was not accepted: a policy refusal as decided, anything else as a temporary failure. */
export function replyFor(app: App, error: unknown, remoteAddress: string): SmtpReply {
  if (error instanceof SmtpReply) return error;
  // RFC 5321 §4.2.5: a 4yz reply leaves the message with the client, which tries again later.
  if (isStoreUnavailable(error)) {
    unreachable((refusedMessages) => app.log.warn("smtp: the database is unreachable; answered 451", { remoteAddress, error: (error as Error).message, ...(refusedMessages ? { refusedMessages } : {}) }));
    return new SmtpReply(451, "4.3.0", "Temporary local problem (storage unreachable), please try again later");
  }
  if (isStoreFailing(error)) {
    const full = isStoreFull(error);
    storageFailing((refusedMessages) => app.log.error(`smtp: the database's ${full ? "disk is full" : "storage failed"}; answered ${full ? 452 : 451}`, { remoteAddress, error: driverReason(error), ...(refusedMessages ? { refusedMessages } : {}) }));
    // RFC 3463 X.3.1: mail system full; RFC 5321 §4.2.2 452: insufficient system storage.
    return full ? new SmtpReply(452, "4.3.1", "Insufficient system storage, please try again later") : new SmtpReply(451, "4.3.0", "Temporary local problem (storage failing), please try again later");
  }
  app.log.error("smtp message not accepted", { error, remoteAddress });
  return new SmtpReply(451, "4.3.0", "Temporary local problem, please try again later");
}

async function listenWithFallback(app: App, server: InboxdSmtpServer): Promise<number> {
  const { smtpPort, bind } = app.config;
  try {
    return await listen(server, smtpPort, bind);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (smtpPort !== 25 || (code !== "EACCES" && code !== "EPERM")) throw error;
    app.log.warn(`smtp: port 25 may not be bound by this user (${code}); listening on ${FALLBACK_PORT} instead`, { hint: "run as root or grant CAP_NET_BIND_SERVICE to receive mail on 25" });
    return await listen(server, FALLBACK_PORT, bind);
  }
}

function listen(server: InboxdSmtpServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      server.server.off("listening", onListening);
      reject(error);
    };
    const onListening = () => {
      server.server.off("error", onError);
      resolve((server.server.address() as AddressInfo).port);
    };
    server.server.once("error", onError);
    server.server.once("listening", onListening);
    server.listen(port, host);
  });
}
