/**
 * Headers for untrusted files served as downloads: never rendered inline at the API's origin,
 * never sniffed into HTML, and sandboxed (no script, no same-origin) should a browser show them anyway.
 */
import { takeTurn } from "../event-loop";
import { ServiceError } from "../errors";
import type { Revocations } from "../auth/revocations";
import type { LargeAnswer } from "../messages/present";
import type { Caller } from "./auth";

/** type/subtype only (RFC 9110 §8.3.1 tokens); parameters and anything malformed give octet-stream. */
const mediaType = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+/i;

/** RFC 8187 §3.2.1 attr-char: what may stay unencoded in `filename*`. */
const encodeExtValue = (value: string) => encodeURIComponent(value).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The most of a name a download's header carries, in code points, as file systems take 255: a
 * sender's name of 20,000 characters made a header of 200 KB, which curl, browsers and proxies
 * refuse, so that the file could not be downloaded at all.
 */
const MAX_NAME_CHARS = 255;
/** The longest ending kept after a long name is cut, so that the file keeps its type. */
const MAX_EXTENSION_CHARS = 16;

function shortened(name: string): string {
  const chars = [...name];
  if (chars.length <= MAX_NAME_CHARS) return name;
  const extension = /\.[^.]+$/u.exec(name)?.[0] ?? "";
  const kept = [...extension].length <= MAX_EXTENSION_CHARS ? extension : "";
  return chars.slice(0, MAX_NAME_CHARS - [...kept].length).join("") + kept;
}

/**
 * `attachment` with the name twice (RFC 6266 §4.3): `filename*` in UTF-8 (RFC 8187) for every
 * client that reads it, and a plain ASCII `filename` for those that do not. Path separators and
 * control characters go from both, and a long name is cut (its extension kept).
 */
export function attachmentDisposition(name: string | undefined): string {
  const safe = shortened((name ?? "").replace(/[\u0000-\u001f\u007f/\\]/g, "_").trim()) || "attachment";
  const ascii = safe.replace(/[^\x20-\x7e]|["%]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeExtValue(safe)}`;
}

export function downloadHeaders(name: string | undefined, contentType: string | undefined): Record<string, string> {
  return {
    "content-type": contentType?.trim().match(mediaType)?.[0].toLowerCase() ?? "application/octet-stream",
    "content-disposition": attachmentDisposition(name),
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox",
    "cache-control": "private, no-store",
  };
}

/** A download or JSON answer over this many bytes holds one of its organization's places until it is read or dropped. */
const LARGE_RESPONSE_BYTES = 64 * 1024;
/** Large responses one organization may have in flight at once; one more is 429. */
export const LARGE_DOWNLOADS_PER_ORGANIZATION = 4;
const CHUNK_BYTES = 64 * 1024;
const RETRY_AFTER_SECONDS = "5";

function* slices(bytes: Uint8Array) {
  for (let at = 0; at < bytes.byteLength; at += CHUNK_BYTES) yield bytes.subarray(at, at + CHUNK_BYTES);
}

async function* encoded(pieces: AsyncIterable<string>) {
  for await (const piece of pieces) yield* slices(Buffer.from(piece));
}

/**
 * Serves downloads and large JSON answers, a large one as a stream that holds one of its
 * organization's places until the client has read it all or gone: a client that asks for a 20 MB
 * source and never reads holds it in memory, and 100 such requests held 2.6 GB; one request for a
 * thread of ten messages with 17 MiB attachments took the server to 965 MB. At most
 * LARGE_DOWNLOADS_PER_ORGANIZATION at once. When one of the organization's API keys is revoked,
 * each looks its own up again, and a revoked key's is cut off: its client, which may have stopped
 * reading, held the organization's places for as long as the connection stayed.
 */
export type Downloads = ReturnType<typeof downloads>;

interface LargeResponse {
  caller: Caller;
  cutOff(): void;
}

export function downloads(revocations: Revocations) {
  const underWay = new Map<string, Set<LargeResponse>>();
  revocations.onApiKeyRevoked((organizationId) => {
    for (const response of underWay.get(organizationId) ?? []) void response.caller.credentialHolds().then((holds) => holds || response.cutOff());
  });
  const takePlace = (organizationId: string) => {
    if ((underWay.get(organizationId)?.size ?? 0) >= LARGE_DOWNLOADS_PER_ORGANIZATION) {
      throw new ServiceError("rate_limited", `Too many large downloads in flight for this organization (at most ${LARGE_DOWNLOADS_PER_ORGANIZATION}): finish one, or retry shortly`, { "Retry-After": RETRY_AFTER_SECONDS });
    }
  };
  /** The chunks, each made when the client has taken the one before: one that stops reading stops them, and keeps its place. */
  const streamed = (caller: Caller, chunks: Iterator<Uint8Array> | AsyncIterator<Uint8Array>, headers: Record<string, string>) => {
    takePlace(caller.organizationId);
    const { organizationId } = caller;
    const responses = underWay.get(organizationId) ?? new Set();
    underWay.set(organizationId, responses);
    let body!: ReadableStreamDefaultController<Uint8Array>;
    const response: LargeResponse = {
      caller,
      cutOff() {
        // Its client may have read it all while the key was looked up.
        if (!responses.has(response)) return;
        finish();
        body.error(new Error("the API key of this download was revoked"));
      },
    };
    responses.add(response);
    const finish = () => {
      if (!responses.delete(response)) return;
      if (responses.size === 0) underWay.delete(organizationId);
    };
    return new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          body = controller;
        },
        async pull(controller) {
          try {
            // A turn of the event loop per chunk: a client that takes each at once drained a long
            // thread (3,000 messages, a read and a render each) in one turn, 0.5-1.5 s that held every
            // other request and SMTP session.
            await takeTurn();
            const next = await chunks.next();
            if (!next.done) return controller.enqueue(next.value);
            controller.close();
            finish();
          } catch (error) {
            finish();
            throw error;
          }
        },
        cancel: finish,
      }),
      { headers },
    );
  };
  return {
    file(caller: Caller, bytes: Uint8Array, headers: Record<string, string>): Response {
      if (bytes.byteLength <= LARGE_RESPONSE_BYTES) return new Response(bytes, { headers });
      return streamed(caller, slices(bytes), headers);
    },
    /** A small answer whole, for Elysia to serialise; a large one, once it has a place (else 429, before anything is read), in pieces. */
    async json<T>(caller: Caller, answer: LargeAnswer<T>): Promise<T> {
      if (answer.contentBytes <= LARGE_RESPONSE_BYTES) return answer.whole();
      // Typed as the value it carries, for the route's response schema: Elysia sends a Response as
      // it is (with the content type it gives the JSON it serialises itself).
      return streamed(caller, encoded(answer.pieces()), { "content-type": "application/json;charset=utf-8" }) as T;
    },
  };
}
