/**
 * Request bodies: JSON only, at most 20 MiB, counted while streaming so an oversized upload is
 * refused at the byte that crosses the limit instead of after buffering all of it.
 */
import { invalid, ServiceError } from "../errors";
import { takeTurn } from "../event-loop";

export const maxBodyBytes = 20 * 1024 * 1024;
/** Bun's own bound on a body, for every API listener: our parser answers the JSON 413 first; this only stops abuse. */
export const listenerBodyBytes = 64 * 1024 * 1024;

const tooLarge = (limit: number) => new ServiceError("too_large", `Request body exceeds ${limit} bytes`);

const isLarge = (length: number) => length > maxBodyBytes / 16;

async function readLimited(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > limit) throw tooLarge(limit);
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  // An 18 MB body takes 20-40 ms to decode and as long to parse: a large one in turns of its own
  // (parseJsonBody), taken in order with the other slices of work (takeTurn), so that two uploads
  // are not decoded in the same turn.
  const bytes = Buffer.concat(chunks);
  if (isLarge(total)) await takeTurn();
  try {
    return utf8.decode(bytes);
  } catch {
    // RFC 8259 §8.1: JSON is UTF-8. Decoded leniently, each byte that is not became U+FFFD, and a
    // password typed in Latin-1 matched every other one that differed only there.
    throw new ServiceError("malformed", "The body must be UTF-8 (RFC 8259 §8.1)");
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const isJsonObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The arrays and objects of a parsed JSON value, each with its depth, `value` itself first, and
 * `visit` called with every key and every value below them; found without recursion and without
 * copying a container's items (Object.values of an array of 10 million numbers, a 20 MB body, held
 * the event loop 9 s and took 1 GB). `visit` returning true ends the walk, and so does the result.
 */
function walkJson(value: unknown, visit: (item: unknown, depth: number) => boolean): boolean {
  if (visit(value, 0)) return true;
  const pending: [object, number][] = typeof value === "object" && value !== null ? [[value, 0]] : [];
  const step = (item: unknown, depth: number) => {
    if (visit(item, depth)) return true;
    if (typeof item === "object" && item !== null) pending.push([item, depth]);
    return false;
  };
  while (pending.length > 0) {
    const [container, depth] = pending.pop()!;
    if (Array.isArray(container)) {
      for (const item of container) if (step(item, depth + 1)) return true;
    } else {
      for (const key in container) if (visit(key, depth + 1) || step((container as Record<string, unknown>)[key], depth + 1)) return true;
    }
  }
  return false;
}

/** Whether a string of a parsed JSON value, a key or a value at any depth, meets `test`. */
const someString = (value: unknown, test: (text: string) => boolean) => walkJson(value, (item) => typeof item === "string" && test(item));

/**
 * How deep a body's arrays and objects may nest. No route's fields go past a few levels (an MCP
 * call's arguments hold the deepest), while the schema check's error messages and the walks
 * below recurse: an array nested 4,500 deep in a 9 KB body overflowed the stack (500).
 */
export const MAX_BODY_NESTING = 32;

/** Whether arrays and objects nest deeper than `limit` in `value`. */
const nestsDeeperThan = (value: unknown, limit: number) => walkJson(value, (item, depth) => depth >= limit && typeof item === "object" && item !== null);

/** U+0000, which no mail may carry and PostgreSQL cannot store. */
const holdsNul = (text: string) => text.includes("\0");
/**
 * A lone surrogate (`\ud800` escaped without its pair): no character, so UTF-8 cannot encode it.
 * Stored, it came back as U+FFFD, and two passwords that differed only there were one. (Without
 * the u flag a pattern reads UTF-16 code units: a high surrogate with no low one after it, or a
 * low one with no high one before.)
 */
const holdsLoneSurrogate = (text: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

/** `%00` in a request's path or query: what no identifier or search holds (see holdsNul). */
export const urlHoldsNul = (url: string) => url.includes("%00");

/**
 * Elysia's parse hook: undefined for an empty body, a parsed value for JSON, 400 otherwise; 413
 * past `limit` bytes (what ./message-memory.ts admits). On a route with a body schema, JSON that is
 * not an object (`"x"`, `[]`, `3`, `null`) is 422: Elysia's normalising would read it as `{}`,
 * which a schema of optional fields accepts. `hasBodySchema` is asked only then.
 */
export async function parseJsonBody(request: Request, contentType: string, limit: number, hasBodySchema: () => boolean): Promise<unknown> {
  // RFC 9110 §8.4, §15.5.16: a coded body (gzip say) read as it is was a misleading "not UTF-8",
  // and one under an unknown coding name was taken as plain.
  const coding = request.headers.get("content-encoding")?.trim().toLowerCase();
  if (coding && coding !== "identity") throw new ServiceError("unsupported_coding", "Content-Encoding is not supported: send the body uncompressed", { "Accept-Encoding": "identity" });
  const text = await readLimited(request, limit);
  if (text.length === 0) return undefined;
  const mediaType = contentType.split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "application/json") throw new ServiceError("malformed", "Content-Type must be application/json");
  let value: unknown;
  try {
    if (isLarge(text.length)) await takeTurn();
    value = JSON.parse(text);
  } catch {
    throw new ServiceError("malformed", "Malformed JSON body");
  }
  if (!isJsonObject(value) && hasBodySchema()) throw invalid("body: must be a JSON object");
  if (nestsDeeperThan(value, MAX_BODY_NESTING)) throw invalid(`body: arrays and objects must not nest more than ${MAX_BODY_NESTING} levels deep`);
  // JSON can carry NUL and surrogates only escaped: the walks are for the bodies that have one.
  if (text.includes("\\u0000") && someString(value, holdsNul)) throw invalid("body: a string must not hold NUL (U+0000)");
  if (/\\u[dD][89a-fA-F]/.test(text) && someString(value, holdsLoneSurrogate)) throw invalid("body: a string must be well-formed Unicode: a surrogate (\\uD800-\\uDFFF) must be one of a pair");
  return value;
}
