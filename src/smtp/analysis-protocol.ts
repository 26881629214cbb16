// What the SMTP server and its analysis workers say to each other, and what both sides share.
import type { DNSResolver } from "mailauth";
import { createResolver } from "../dns/resolver";
import type { Analysis } from "./analyze";
import type { SmtpIdentity } from "./authenticate";
import { cachingResolver } from "./dns-cache";

export type WorkerRequest =
  | { type: "init"; authservId: string; dnsServers: string[] }
  | { type: "analyze"; id: number; raw: Uint8Array; identity: SmtpIdentity };

export type WorkerReply = { ready: true } | { id: number; analysis: Analysis } | { id: number; error: { name: string; message: string } };

/** The resolver every analysis uses: INBOXD_DNS_SERVERS behind a one-minute cache. */
export function analysisResolver(dnsServers: string[]): DNSResolver {
  return cachingResolver(createResolver(dnsServers).forMailauth, { ttlMs: 60_000, maxEntries: 10_000 });
}

/**
 * The ArrayBuffers of `views` that may move to another thread instead of being copied: those a
 * view covers whole. A small Buffer shares Node's allocation pool with others, which must stay.
 */
export function transferable(views: Uint8Array[]): ArrayBuffer[] {
  const whole = views.filter((view) => view.byteOffset === 0 && view.byteLength === view.buffer.byteLength).map((view) => view.buffer as ArrayBuffer);
  return [...new Set(whole)];
}

/** A Buffer over the same bytes: structured cloning turns Buffers into plain Uint8Arrays. */
export const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** An Analysis as it arrives from a worker, with its Buffers restored. */
export function revivedAnalysis(analysis: Analysis): Analysis {
  const attachments = analysis.parsed.attachments.map((attachment) => ({ ...attachment, content: asBuffer(attachment.content) }));
  return { ...analysis, raw: asBuffer(analysis.raw), parsed: { ...analysis.parsed, attachments } };
}
