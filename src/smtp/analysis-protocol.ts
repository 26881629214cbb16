// What the SMTP server and its analysis threads say to each other, and what both sides share.
import { configuredResolver } from "../dns/resolver";
import { asBuffer } from "../workers/transfer";
import type { Analysis, AnalysisSettings } from "./analyze";
import type { AuthenticationOutcome, SmtpIdentity } from "./authenticate";
import type { DnsBudget } from "./dns-budget";
import { cachingResolver } from "./dns-cache";

export interface AnalysisProtocol {
  setup: { authservId: string; dnsServers: string[]; dnsBudget: DnsBudget };
  request: { raw: Uint8Array; identity: SmtpIdentity };
  reply: Analysis;
}

/** The settings of every analysis: the configured resolver behind a one-minute cache. */
export function analysisSettings(setup: AnalysisProtocol["setup"]): AnalysisSettings {
  return { authservId: setup.authservId, resolver: cachingResolver(configuredResolver(setup).forMailauth, { ttlMs: 60_000, maxEntries: 10_000 }), dnsBudget: setup.dnsBudget };
}

/** An Analysis as it arrives from a thread, with its Buffers restored; one made on this thread stays as it was. */
export function revivedAnalysis(analysis: Analysis): Analysis {
  const attachments = analysis.parsed.attachments.map((attachment) => ({ ...attachment, content: asBuffer(attachment.content) }));
  return { ...analysis, raw: asBuffer(analysis.raw), parsed: { ...analysis.parsed, attachments } };
}

/** The outcome recorded when authentication could not run (RFC 8601 §2.7.1: temperror for each method). */
export function temporaryError(authservId: string): AuthenticationOutcome {
  const authentication = { spf: "temperror", dkim: "temperror", dmarc: "temperror", arc: "temperror" };
  const methods = Object.entries(authentication).map(([method, word]) => `${method}=${word}`);
  return { authentication, field: `Authentication-Results: ${authservId};\r\n ${methods.join(";\r\n ")}\r\n`, dmarcRejects: false, dmarcUndecided: false };
}
