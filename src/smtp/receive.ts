// What happens between the end of the data and the reply to it: limits and smuggling checks, then
// the raw message and its envelope committed before the 250 goes out, for the inbound queue to
// analyse and store (./inbound-queue); or, where the analysis decides the reply (the DMARC
// policy), analysis and storage of one copy per recipient inbox first. Reports to our return
// paths go to the outbound side.
import type { SMTPServerDataStream, SMTPServerSession } from "smtp-server";
import type { App } from "../app";
import { parseAddress } from "../mail/address";
import { headerOverLimit } from "../mail/limits";
import type { Reservation } from "../memory/in-flight";
import { releasePrepared } from "../messages/receive";
import { peerGroup } from "../net/peer-group";
import { processReturnedReport } from "../outbound/returned-report";
import { receiveTlsReport } from "../mta-sts/tls-reports";
import type { InboundEnvelope } from "../store";
import type { AnalysisPool } from "./analysis-pool";
import type { Analysis } from "./analyze";
import { identityOf, logCopies, prepareCopies, storeCopies } from "./inbound-copies";
import type { InboundPace } from "./inbound-queue";
import { dataDefects, type DataDefect } from "./line-breaks";
import type { RecipientTarget } from "./recipients";
import { SmtpReply } from "./replies";
import { admittedRecipients } from "./sender-access";

export interface Receiver {
  app: App;
  analysis: AnalysisPool;
  /** Told of each acceptance: the inbound queue gives way while mail arrives. */
  pace: InboundPace;
}

/** An accepted RCPT: the address as it will show in our Received field, and where it goes. */
export interface Recipient {
  address: string;
  target: RecipientTarget;
}

export interface MessageData {
  /** Complete unless oversized or over the memory budget; empty then. */
  raw: Buffer;
  /** Bytes the client sent, whether kept or not. */
  size: number;
  oversized: boolean;
  /** The message memory (INBOXD_MESSAGE_MEMORY_MB) was spent while it arrived (the session was told so with 421). */
  overBudget: boolean;
  /** Why the data must be refused (bare CR or LF, NUL), judged while it arrived; null when complete and sound, or not kept. */
  defect: DataDefect | null;
}

/**
 * Collects the data of one DATA command, keeping at most `maxSize` bytes (RFC 1870: a message
 * found larger while it arrives is refused at its end: the rest is read and dropped) and only
 * while `memory` grants them: past that, `onMemorySpent` is told at once (reading the rest of a
 * large message only to refuse it would cost as much CPU and garbage as keeping it). Rejects when
 * the connection drops first.
 */
export function readMessageData(stream: SMTPServerDataStream, maxSize: number, memory: Reservation, onMemorySpent: () => void, declaredSize = 0): Promise<MessageData> {
  return new Promise((resolve, reject) => {
    // With a declared size (RFC 1870), the data goes straight into one buffer of that size: no
    // list of chunks to join into a second copy at the end.
    let exact = declaredSize > 0 && declaredSize <= maxSize ? Buffer.allocUnsafe(declaredSize) : undefined;
    let chunks: Buffer[] = [];
    let size = 0;
    let overBudget = false;
    const defects = dataDefects();
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxSize || overBudget) return;
      defects.read(chunk);
      if (!memory.cover(size)) {
        overBudget = true;
        exact = undefined;
        chunks = [];
        memory.release();
        return onMemorySpent();
      }
      if (exact && size <= exact.length) return exact.set(chunk, size - chunk.length);
      if (exact) {
        chunks = [exact.subarray(0, size - chunk.length)];
        exact = undefined;
      }
      chunks.push(chunk);
    });
    stream.once("end", () => {
      const oversized = stream.sizeExceeded || size > maxSize;
      if (oversized || overBudget) return resolve({ raw: Buffer.alloc(0), size, oversized, overBudget, defect: null });
      // A declared size a little over the real one: the message is moved to a buffer of its own size.
      const raw = !exact ? Buffer.concat(chunks, size) : size === exact.length ? exact : Buffer.from(exact.subarray(0, size));
      resolve({ raw, size, oversized, overBudget, defect: defects.end() });
    });
    stream.once("error", reject);
    stream.once("close", () => reject(new Error("the connection closed before the end of the data")));
  });
}

/** RFC 1870 §6.1 452 / RFC 3463 4.3.1: a temporary shortage; the sender keeps the message and retries. */
export const memorySpentReply = new SmtpReply(452, "4.3.1", "Too much mail in progress right now, please try again later");
/** The same shortage found in the middle of the data: RFC 5321 §3.8 lets a server close with 421 at any time. */
export const memorySpentClosing = "4.3.1 Too much mail in progress right now, please try again later, closing connection";

const defectReplies: Record<DataDefect, SmtpReply> = {
  "bare LF": new SmtpReply(554, "5.5.2", "Bare LF in the message data is not allowed (RFC 5321 section 2.3.8): possible SMTP smuggling"),
  "bare CR": new SmtpReply(554, "5.5.2", "Bare CR in the message data is not allowed (RFC 5321 section 2.3.8): possible SMTP smuggling"),
  NUL: new SmtpReply(554, "5.6.0", "NUL in the message data is not allowed (RFC 6152 section 3)"),
};

/**
 * Decides on one message; resolves with the text of the 250 reply once it is on disk, or throws
 * the SmtpReply that refuses it. The 250 waits for the commit of the raw message and its envelope
 * only: the analysis follows on the inbound queue (./inbound-queue). With INBOXD_DMARC_ENFORCE the
 * analysis decides the reply, so it comes first, and the copies are stored before the 250.
 */
export async function receiveMessage(receiver: Receiver, session: SMTPServerSession, recipients: Recipient[], data: MessageData): Promise<string> {
  const { app } = receiver;
  if (data.oversized) throw new SmtpReply(552, "5.3.4", `Message size exceeds the limit of ${app.config.smtpMaxSize} bytes`);
  if (data.overBudget) throw memorySpentReply;
  if (data.defect) throw defectReplies[data.defect];
  const overLimit = headerOverLimit(data.raw, app.config.smtpMaxHeaderLines);
  if (overLimit) throw new SmtpReply(552, "5.3.4", `Message header too large: ${overLimit}`);

  const envelope = envelopeOf(app, session, recipients);
  envelope.recipients = await admittedRecipients(app, envelope, data.raw);
  // With DMARC enforced the analysis decides the reply, and takes the raw bytes over.
  const analysis = envelope.recipients.length > 0 && app.config.dmarcEnforce ? await analyseForReply(receiver, envelope, data.raw) : undefined;
  const raw = analysis?.raw ?? data.raw;
  // A report sent along with mail the inboxes refuse is refused with it (RFC 5321 §6.1: until its
  // 250, a message is the sender's), so it is applied only once nothing else can refuse it.
  const returnPaths = new Set(recipients.flatMap(({ target }) => (target.kind === "returnPath" ? [target.deliveryId] : [])));
  if (returnPaths.size > 0) await processReturnedReport(app, [...returnPaths], raw);
  if (recipients.some(({ target }) => target.kind === "tlsReport")) await receiveTlsReport(app, raw);
  if (envelope.recipients.length === 0) return "Report accepted";
  if (analysis) await storeAnalysed(app, envelope, analysis);
  else await acceptForAnalysis(receiver, envelope, raw);
  return `Message accepted as ${envelope.transaction}`;
}

/** The raw message and its envelope, committed with others in one group commit; the inbound queue is told. */
async function acceptForAnalysis({ app, pace }: Receiver, envelope: InboundEnvelope, raw: Buffer): Promise<void> {
  const now = app.clock.now();
  const peer = peerGroup(envelope.clientIp);
  const source = await app.store.blobs.prepare([raw], now);
  try {
    await app.store.transactionBatched((tx) => tx.acceptedInbound.accept(envelope, peer, source, raw.length, now));
  } finally {
    if (source.blobId) await app.store.blobs.release([source.blobId]);
  }
  pace.accepted(peer);
  app.queues.wake("inbound");
}

/** Analysis before the reply: a message the sender's DMARC policy rejects is refused (thrown); else its analysis, to be stored before the 250. */
async function analyseForReply(receiver: Receiver, envelope: InboundEnvelope, raw: Buffer): Promise<Analysis> {
  // The analysis takes the raw bytes over (a worker thread gets them without a copy): from here on, `analysis.raw`.
  const analysis = await analyze(receiver, envelope, raw);
  // RFC 7489 §6.6.3 leaves temporary DNS failures to the receiver. When our own budget made them
  // (a sender's slow names can spend it before DMARC's look-ups), neither letting the message
  // through nor refusing it for good would be sure: the sender tries again.
  if (analysis.dmarcUndecided) throw new SmtpReply(451, "4.3.0", "Message not accepted: the DNS look-ups of its authentication took too long, please try again later");
  if (analysis.dmarcRejects) throw new SmtpReply(550, "5.7.1", "Rejected by the DMARC policy of the sender's domain");
  return analysis;
}

/** The copies of a message analysed before its reply, stored at once. */
async function storeAnalysed(app: App, envelope: InboundEnvelope, analysis: Analysis): Promise<void> {
  const prepared = await prepareCopies(app, envelope, analysis);
  // Sessions whose messages are ready together share one commit; the 250 waits until it is on disk.
  const stored = await app.store.transactionBatched((tx) => storeCopies(app, tx, envelope, analysis, prepared)).finally(() => releasePrepared(app, prepared));
  logCopies(app, envelope, analysis, stored);
}

/** What the analysis and the stored copies need of the session: peer, HELO, MAIL FROM, TLS, and one copy per inbox. */
function envelopeOf(app: App, session: SMTPServerSession, recipients: Recipient[]): InboundEnvelope {
  const { mailFrom } = session.envelope;
  return {
    transaction: transactionId(session),
    clientIp: session.remoteAddress,
    helo: session.hostNameAppearsAs,
    // smtp-server hands out IDN domains as U-labels; SPF asks DNS for A-labels.
    mailFrom: mailFrom ? (parseAddress(mailFrom.address)?.address ?? mailFrom.address) : "",
    // RFC 6531 §3.7.3: a transaction with SMTPUTF8 is UTF8SMTP (UTF8SMTPS with TLS) in the Received field.
    protocol: (session.envelope as { smtpUtf8?: boolean }).smtpUtf8 ? session.transmissionType.replace(/^ESMTP/, "UTF8SMTP") : session.transmissionType,
    tls: session.tlsOptions ? { version: session.tlsOptions.version, cipher: session.tlsOptions.name } : undefined,
    receivedAt: app.clock.now(),
    recipients: copiesPerInbox(recipients),
  };
}

/** Names the transaction in our Received field and in the 250, for matching a sender's report to our log. */
const transactionId = (session: SMTPServerSession) => `${session.id}.${session.transaction}`;

/** One copy per inbox (`a+x@` and `a+y@` reach the same inbox), named by the first address that reached it. */
function copiesPerInbox(recipients: Recipient[]): InboundEnvelope["recipients"] {
  const byInbox = new Map<string, InboundEnvelope["recipients"][number]>();
  for (const { address, target } of recipients) {
    if (target.kind === "inbox" && !byInbox.has(target.inbox.id)) byInbox.set(target.inbox.id, { organizationId: target.inbox.organizationId, inboxId: target.inbox.id, address });
  }
  return [...byInbox.values()];
}

async function analyze(receiver: Receiver, envelope: InboundEnvelope, raw: Buffer): Promise<Analysis> {
  try {
    return await receiver.analysis.analyze(raw, identityOf(envelope));
  } catch (error) {
    if ((error as Error).name === "MessageLimitError") throw new SmtpReply(552, "5.3.4", `Message too complex: ${(error as Error).message}`);
    if ((error as Error).name === "AnalysisTimeoutError") throw new SmtpReply(451, "4.3.0", `Message not accepted: ${(error as Error).message}, please try again later`);
    throw error;
  }
}
