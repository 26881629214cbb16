// Everything inboxd reads out of a received message before it stores it: the parsed fields and
// the authentication results, and the raw source cleaned of forged trace fields. CPU-heavy and
// free of the database, so it runs on the analysis workers (./analysis-pool).
import { createHash } from "node:crypto";
import { parseMessage, type ParsedMessage } from "../mail/parse";
import type { ReceivedContent } from "../messages/receive";
import { authenticateMessage, type AuthenticationOutcome, type AuthenticationSettings, type SmtpIdentity } from "./authenticate";
import { temporaryError } from "./analysis-protocol";
import { fieldName, headerFieldsKept, legacyHeaderText, readHeaderBlock } from "./header-fields";
import { withoutForgedTraceFields } from "./trace";

export interface Analysis extends AuthenticationOutcome {
  /** What is stored of the parsed message; the rest never crosses back from the worker. */
  parsed: ReceivedContent;
  /** The message as received, less Authentication-Results fields that claim to be ours. */
  raw: Buffer;
  /** Its envelope sender, subject and body, digested: MessageRecord.receivedDigest. Absent for a message stored unanalysed. */
  receivedDigest?: string;
}

/** The authentication's settings; its authservId also names the forged trace fields taken out. */
export type AnalysisSettings = AuthenticationSettings;

/**
 * The top-level header fields the parser is given: those the stored content comes from
 * (storedContent) and those that shape the body (MIME-Version, Content-*). mailparser decodes
 * every field it reads, and the rest (DKIM and ARC signatures, trace fields, list and client
 * fields) only the authentication checks use, from the whole message.
 */
const parsedFields = new Set(["from", "to", "cc", "reply-to", "subject", "date", "message-id", "in-reply-to", "references", "mime-version"]);
const isParsedField = (field: string) => {
  const name = fieldName(field);
  return parsedFields.has(name) || name.startsWith("content-");
};

export async function analyzeMessage(raw: Buffer, identity: SmtpIdentity, settings: AnalysisSettings): Promise<Analysis> {
  // Read once for the three edits below: the parser's fields, mailauth's signature cap, the trace.
  const block = readHeaderBlock(raw);
  const parsing = parseMessage(headerFieldsKept(raw, isParsedField, block, legacyHeaderText(block.fields)));
  const [parsed, outcome] = await Promise.all([
    parsing,
    // A failure inside mailauth must not lose the message: it is recorded as a temporary error.
    authenticateMessage(
      raw,
      identity,
      settings,
      block,
      // A parse that fails fails the analysis through `parsing`: no shown author, and no rejection
      // left unhandled while mailauth still waits for DNS (it ended the thread).
      parsing.then(
        (parsed) => parsed.from,
        () => undefined,
      ),
    ).catch(() => temporaryError(settings.authservId)),
  ]);
  return { parsed: storedContent(parsed), raw: withoutForgedTraceFields(raw, settings.authservId, block), receivedDigest: receivedDigest(identity, parsed, raw.subarray(block.end)), ...outcome };
}

/**
 * What a resend after a lost 250 keeps: the envelope sender, the author's and reply addresses, the
 * subject and the body. Not the other header fields: a sender that signs each attempt anew (DKIM's
 * t=, as inboxd's own outbound queue does) or a relay on the way adds fields that differ from one
 * attempt to the next. The addresses count: a copy sent first under the message's id with a
 * Reply-To of its own was kept as the message, which then passed for its resend, and replies went
 * to the forger. Here, on the analysis thread: a hash of a large message would hold the event loop
 * (about 1 ms per MB).
 */
const receivedDigest = ({ mailFrom }: SmtpIdentity, { from, replyTo, subject }: ParsedMessage, body: Buffer) =>
  createHash("sha256").update(mailFrom).update("\0").update(from ?? "").update("\0").update((replyTo ?? []).join(",")).update("\0").update(subject).update("\0").update(body).digest("base64url");

function storedContent({ messageId, inReplyTo, references, from, fromName, to, cc, replyTo, subject, text, html, attachments }: ParsedMessage): ReceivedContent {
  return { messageId, inReplyTo, references, from, fromName, to, cc, replyTo, subject, text, html, attachments };
}
