/**
 * How MCP tools reach inboxd: each tool is one call of the HTTP API, made with the caller's own
 * API key, so a tool has exactly the API's validation, limits, rate limits, tenancy and error
 * messages. The same caller serves both transports; only what answers a Request differs: the
 * Elysia app's `handle` in the server's own process for `/mcp` (no network hop), `fetch` to a
 * running inboxd for `inboxd mcp` over stdio.
 */
import { withoutPassword } from "../config";

/** Answers an HTTP request: the Elysia app's `handle`, or `fetch`. */
export type RequestHandler = (request: Request) => Promise<Response>;

export interface ApiRequest {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** The path under the server's root, its segments already encoded (see `pathOf`). */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Sent as the `Idempotency-Key` header: a retried call with the same key is not carried out twice. */
  idempotencyKey?: string;
}

export interface ApiReply {
  /** The absolute URL that was called. */
  url: string;
  response: Response;
}

export type ApiCaller = (request: ApiRequest) => Promise<ApiReply>;

/**
 * A path from literal parts and caller-given identifiers, each identifier one encoded segment.
 * `.` and `..` are refused: URL parsing would resolve them (also written as `%2E`) and reach
 * another route.
 */
export function pathOf(literals: TemplateStringsArray, ...identifiers: string[]): string {
  return literals.reduce((path, literal, index) => {
    if (index === 0) return literal;
    const identifier = identifiers[index - 1]!;
    if (/^\.{1,2}$/.test(identifier)) throw new Error(`'${identifier}' is not an identifier`);
    return path + encodeURIComponent(identifier) + literal;
  });
}

export function apiCaller(handle: RequestHandler, baseUrl: string, apiKey: string): ApiCaller {
  const root = baseUrl.replace(/\/+$/, "");
  return async ({ method, path, query, body, idempotencyKey }) => {
    const url = new URL(root + path);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, accept: "application/json" };
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    let encoded: Uint8Array | undefined;
    if (body !== undefined) {
      encoded = new TextEncoder().encode(JSON.stringify(body));
      headers["content-type"] = "application/json";
      // Said outright: a body of unknown length counts as the largest one against the message memory (http/message-memory.ts).
      headers["content-length"] = String(encoded.byteLength);
    }
    // Made before the call: a header the runtime refuses is the caller's error, not an unreachable server.
    const request = new Request(url.href, { method, headers, body: encoded });
    let response: Response;
    try {
      response = await handle(request);
    } catch (error) {
      // Over stdio: inboxd is not running at INBOXD_URL, or cannot be reached; said as the tool's error.
      // Without INBOXD_URL's password: what the tool says goes into the agent's context.
      throw new Error(`inboxd at ${withoutPassword(root)} did not answer: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { url: url.href, response };
  };
}
