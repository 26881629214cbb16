// Everything inboxd reads out of a received message before it stores it: the parsed fields and
// the authentication results, and the raw source cleaned of forged trace fields. CPU-heavy and
// free of the database, so it runs on the analysis workers (./analysis-pool).
import type { DNSResolver } from "mailauth";
import { parseMessage, type ParsedMessage } from "../mail/parse";
import type { ReceivedContent } from "../messages/receive";
import { authenticateMessage, type AuthenticationOutcome, type SmtpIdentity } from "./authenticate";
import { temporaryError } from "./analysis-protocol";
import { withoutForgedAuthenticationResults } from "./trace";

export interface Analysis extends AuthenticationOutcome {
  /** What is stored of the parsed message; the rest never crosses back from the worker. */
  parsed: ReceivedContent;
  /** The message as received, less Authentication-Results fields that claim to be ours. */
  raw: Buffer;
}

export interface AnalysisSettings {
  /** INBOXD_HOSTNAME: the authserv-id of our Authentication-Results. */
  authservId: string;
  resolver: DNSResolver;
}

export async function analyzeMessage(raw: Buffer, identity: SmtpIdentity, settings: AnalysisSettings): Promise<Analysis> {
  const [parsed, outcome] = await Promise.all([
    parseMessage(raw),
    // A failure inside mailauth must not lose the message: it is recorded as a temporary error.
    authenticateMessage(raw, identity, settings.authservId, settings.resolver).catch(() => temporaryError(settings.authservId)),
  ]);
  return { parsed: storedContent(parsed), raw: withoutForgedAuthenticationResults(raw, settings.authservId), ...outcome };
}

function storedContent({ messageId, inReplyTo, references, from, fromName, to, cc, subject, text, html, attachments }: ParsedMessage): ReceivedContent {
  return { messageId, inReplyTo, references, from, fromName, to, cc, subject, text, html, attachments };
}
