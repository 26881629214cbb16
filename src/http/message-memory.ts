/**
 * Request bodies count against the message memory (INBOXD_MESSAGE_MEMORY_MB) from before they are
 * read until the response is sent: a send with 18 MB of attachments holds the body, its decoded
 * parts and the composed message at once. A body that does not fit now is refused before it is
 * read, 503 with Retry-After, as SMTP answers 452 for the same reason.
 */
import { Elysia } from "elysia";
import type { App } from "../app";
import { ServiceError } from "../errors";
import type { Reservation } from "../memory/in-flight";
import { maxBodyBytes } from "./body";

/** Small bodies (logins, inbox names, short sends) are always let through: they cannot fill the memory. */
const UNCOUNTED_BODY_BYTES = 64 * 1024;
const RETRY_AFTER_SECONDS = "5";

/**
 * Requests the server makes to itself while serving a request already counted: the API calls of
 * the MCP tools (src/mcp), whose bodies come out of the `/mcp` body that holds its reservation
 * until its response. Counted twice, a send through `/mcp` could use only half the memory.
 */
const countedAlready = new WeakSet<Request>();
export const withinCountedRequest = (request: Request): Request => (countedAlready.add(request), request);

export function messageMemoryGuard(app: App) {
  const held = new WeakMap<Request, Reservation>();
  return new Elysia({ name: "message-memory" })
    .onRequest(({ request }) => {
      if (!request.body || countedAlready.has(request)) return;
      const length = request.headers.get("content-length");
      // A chunked body does not say its size: it may be as large as any body.
      const bytes = length === null ? maxBodyBytes : Math.min(Number(length) || 0, maxBodyBytes);
      if (bytes <= UNCOUNTED_BODY_BYTES) return;
      const memory = app.messageMemory.open();
      if (!memory.cover(bytes)) {
        app.metrics.memoryDeferrals.inc({ protocol: "http" });
        throw new ServiceError("unavailable", "The server is busy with other large messages; please try again shortly", { "Retry-After": RETRY_AFTER_SECONDS });
      }
      held.set(request, memory);
    })
    .onAfterResponse({ as: "global" }, ({ request }) => held.get(request)?.release());
}
