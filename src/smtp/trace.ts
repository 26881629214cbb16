// The trace fields of the messages inboxd accepts: its own Return-Path and Received fields (RFC
// 5321 §4.4), and the removal of those a sender wrote in their place before ours are added above.
import { isIPv6 } from "node:net";
import { fieldName, filterHeaderFields, readHeaderBlock } from "./header-fields";

export interface TraceDetails {
  /** The name the client gave in HELO/EHLO. */
  helo: string;
  clientIp: string;
  /** INBOXD_HOSTNAME. */
  hostname: string;
  /** RFC 3848 protocol type: SMTP, ESMTP, ESMTPS. */
  protocol: string;
  /** Negotiated TLS, as Postfix writes it. */
  tls?: { version: string; cipher: string };
  /** Identifies the transaction in our logs. */
  id: string;
  /** The one recipient this copy is for; the field names no other (RFC 5321 §7.2: Bcc stays private). */
  recipient: string;
  time: Date;
}

export function receivedField(trace: TraceDetails): string {
  const literal = isIPv6(trace.clientIp) ? `[IPv6:${trace.clientIp}]` : `[${trace.clientIp}]`;
  const lines = [
    `Received: from ${safeHelo(trace.helo)} (${literal})`,
    ...(trace.tls ? [`\t(using ${trace.tls.version} with cipher ${trace.tls.cipher})`] : []),
    `\tby ${trace.hostname} (inboxd) with ${trace.protocol} id ${trace.id}`,
    `\tfor <${trace.recipient}>; ${rfc5322Date(trace.time)}`,
  ];
  return lines.join("\r\n") + "\r\n";
}

/**
 * The message less the trace fields only we may write. RFC 8601 §5: an Authentication-Results
 * field that names our authserv-id but arrived with the message was forged by the sender or on
 * the way. RFC 5321 §4.4: the Return-Path is the final delivery's to add (a sender "SHOULD NOT"
 * send one), so one that came with the message names an envelope sender nobody saw; Postfix
 * drops it alike (`message_drop_headers`). Ours are added on top.
 */
export function withoutForgedTraceFields(raw: Buffer, authservId: string, block = readHeaderBlock(raw)): Buffer {
  return filterHeaderFields(raw, (field) => fieldName(field) !== "return-path" && !claimsAuthservId(field, authservId), block);
}

/** RFC 5321 §4.4: the final delivery records the envelope's reverse-path; `<>` for the null one of bounces. */
export const returnPathField = (mailFrom: string) => `Return-Path: <${mailFrom}>\r\n`;

function claimsAuthservId(field: string, authservId: string): boolean {
  if (fieldName(field) !== "authentication-results") return false;
  return asHostName(leadingAuthservId(field.slice(field.indexOf(":") + 1))) === asHostName(authservId);
}

/** A host name as a reader compares it: any case, and the root's trailing dot (`mx.example.` is `mx.example`) left out. */
const asHostName = (name: string) => name.toLowerCase().replace(/\.$/, "");

/**
 * RFC 8601 §2.2: the value starts with the authserv-id (a token, or a quoted-string: RFC 2045
 * value), after optional CFWS, whose comments nest and may hold quoted pairs (RFC 5322 §3.2.2).
 * One pass, however the sender nests or leaves comments open: a pattern that looked for each
 * comment's end from every "(" took 5 s over a field of 200 KiB of them.
 */
function leadingAuthservId(value: string): string {
  let at = 0;
  for (let depth = 0; at < value.length; at++) {
    const c = value[at];
    if (c === "(") depth++;
    else if (depth > 0 && c === ")") depth--;
    else if (depth > 0 && c === "\\") at++;
    else if (depth === 0 && !/\s/.test(c!)) break;
  }
  if (value[at] === '"') {
    let id = "";
    for (at++; at < value.length && value[at] !== '"'; at++) id += value[at] === "\\" ? (value[++at] ?? "") : value[at];
    return id;
  }
  const token = value.slice(at);
  const end = token.search(/[\s;(]/);
  return end === -1 ? token : token.slice(0, end);
}

// smtp-server bounds the HELO argument and refuses control characters; what else could upset a
// reader of the field (comments, the date separator) is replaced.
const safeHelo = (helo: string) => helo.replace(/[^A-Za-z0-9.\-_:[\]]/g, "?") || "unknown";

/** RFC 5322 §3.3 date-time in UTC, with the numeric zone (not the obsolete "GMT"). */
const rfc5322Date = (time: Date) => time.toUTCString().replace(/GMT$/, "+0000");
