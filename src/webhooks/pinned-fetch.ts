// One webhook POST to an address that resolveAndCheck approved. The connection
// goes to that address, never to what a second DNS look-up might answer (DNS
// rebinding), while the request still names the URL's host: in the Host
// header, in TLS SNI, and as the name the certificate must carry.
//
// Bun's fetch does all of it: a URL with the address as host, a Host header
// (Bun sends the one given), and `tls.serverName`, which Bun uses for SNI and
// for the certificate check. node:https with a `lookup` option works under
// Bun too, but needs more code for the same result.
import { parseHostLiteral } from "../net/address-policy";
import { readBodyUpTo } from "../net/body";
import { storableText } from "../store/storable-text";

export const RESPONSE_BODY_LIMIT = 4096;

export type PinnedPost = {
  url: URL;
  address: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  // Tests only: a PEM certificate to trust instead of the system's CAs. The
  // server's certificate must still carry the URL's host name.
  trustedCa?: string;
};

// status 0 with an error when no response came (refused, TLS failure, timeout).
export type PinnedResponse = { status: number; body: string; error?: string };

export async function pinnedPost(request: PinnedPost): Promise<PinnedResponse> {
  const target = new URL(request.url);
  target.hostname = request.address.includes(":") ? `[${request.address}]` : request.address;
  // One deadline for the whole exchange, body included.
  const signal = AbortSignal.timeout(request.timeoutMs);
  // The URL's host, whatever the caller's headers say (a plain object: cheaper than Headers).
  const headers: Record<string, string> = { host: request.url.host };
  for (const [name, value] of Object.entries(request.headers)) if (name.toLowerCase() !== "host") headers[name] = value;
  let response: Response;
  try {
    response = await fetch(target, {
      method: "POST",
      headers,
      body: request.body,
      // A redirect is the receiver's answer, recorded as such; following it
      // would reach a host nobody checked.
      redirect: "manual",
      signal,
      ...(target.protocol === "https:" ? { tls: tlsOptions(request) } : {}),
    });
  } catch (error) {
    return { status: 0, body: "", error: storableText(describeFailure(error, request.timeoutMs)) };
  }
  return { status: response.status, body: storableText(await readCapped(response)) };
}

// Connections are pooled (a webhook receiver gets many posts). Bun keys a pooled
// TLS connection by address and serverName, so one verified for another host
// name on the same address never carries this request (tested in
// pinned-fetch.test.ts).
function tlsOptions(request: PinnedPost) {
  const hostIsName = parseHostLiteral(request.url.hostname) === null;
  return {
    ...(hostIsName ? { serverName: request.url.hostname } : {}),
    ...(request.trustedCa === undefined ? {} : { ca: request.trustedCa }),
  };
}

// Keeps the first RESPONSE_BODY_LIMIT bytes (../net/body). A streamed body cut off by the
// deadline keeps what arrived: the status already answered the delivery.
async function readCapped(response: Response): Promise<string> {
  if (hasSmallBody(response)) {
    // The usual answer ("ok", "{}"): read whole, at a fraction of a stream
    // reader's cost. Should the deadline cut it off, nothing of it is kept.
    return response.text().catch(() => "");
  }
  return new TextDecoder().decode((await readBodyUpTo(response, RESPONSE_BODY_LIMIT)).bytes);
}

// A body that HTTP framing ends within the limit: a Content-Length no larger
// than it, and no Content-Encoding (fetch would inflate the body past it).
function hasSmallBody(response: Response): boolean {
  const length = response.headers.get("content-length");
  const encoding = response.headers.get("content-encoding");
  return length !== null && /^\d+$/.test(length) && Number(length) <= RESPONSE_BODY_LIMIT && (encoding === null || encoding === "identity");
}

function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  if (!(error instanceof Error)) return String(error);
  const code = (error as Error & { code?: unknown }).code;
  return withOriginsOnly(typeof code === "string" && !error.message.includes(code) ? `${code}: ${error.message}` : error.message);
}

/**
 * The runtime's messages name the URL fetched whole ("Malformed_HTTP_Response fetching
 * \"https://host/path?token=...\""): its path and query may hold the receiver's token, and the
 * failure is logged and shown in the attempts log. Each URL is cut to its origin.
 */
const withOriginsOnly = (message: string) => message.replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (url) => (URL.canParse(url) ? new URL(url).origin : "(a URL)"));
