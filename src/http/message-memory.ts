/**
 * Request bodies count against the message memory (INBOXD_MESSAGE_MEMORY_MB) from before they are
 * read until the response is sent: a send with 18 MB of attachments holds the body, its decoded
 * parts and the composed message at once. A body that does not fit now is refused before it is
 * read, 503 with Retry-After, as SMTP answers 452 for the same reason. Only a known caller's body
 * is counted: the memory is shared with inbound SMTP, and a stranger holding it (a large body
 * declared, then sent a byte at a time) would turn away everyone's mail.
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

/** The check of the caller's credential that the route's guard makes (src/http/auth.ts): its organization, or it throws. */
type CredentialCheck = () => Promise<string>;

export function messageMemoryGuard(app: App) {
  const held = new WeakMap<Request, Reservation>();
  return {
    /**
     * How many bytes of the request's body may be read, asked by the body parser before it reads
     * any. A small body: all of it. A large one (or one of unknown size: a chunked body may be as
     * large as any) is refused at once unless its caller's credential passes (401), and then
     * unless the memory covers it (503). A route open to anyone (sign-up, log-in) reads at most
     * UNCOUNTED_BODY_BYTES, which no such route needs more of.
     */
    async admit(request: Request, credentialCheckOfRoute: () => CredentialCheck | undefined): Promise<number> {
      if (!request.body || countedAlready.has(request)) return maxBodyBytes;
      const length = request.headers.get("content-length");
      const bytes = length === null ? maxBodyBytes : Math.min(Number(length) || 0, maxBodyBytes);
      if (bytes <= UNCOUNTED_BODY_BYTES) return maxBodyBytes;
      const check = credentialCheckOfRoute();
      if (!check) return UNCOUNTED_BODY_BYTES;
      // Counted against the organization: its large bodies hold at most half the memory, one of
      // them always. A tenant that opened hundreds of sends just over 64 KiB, each sent a byte at a
      // time, held all of it, and every other tenant's mail and sends were told to try later.
      const memory = app.messageMemory.open(await check());
      if (!memory.cover(bytes)) {
        app.metrics.memoryDeferrals.inc({ protocol: "http" });
        throw new ServiceError("unavailable", "The server is busy with other large messages; please try again shortly", { "Retry-After": RETRY_AFTER_SECONDS });
      }
      held.set(request, memory);
      return maxBodyBytes;
    },
    /** Gives a request's memory back once its response is sent. */
    release: new Elysia({ name: "message-memory" }).onAfterResponse({ as: "global" }, ({ request }) => {
      const memory = held.get(request);
      if (!memory) return;
      held.delete(request);
      memory.release();
    }),
  };
}
