/**
 * The Idempotency-Key header on the POSTs that create (send, reply, forward, draft send, inbox
 * creation): one macro, so that no route repeats it. A route opts in with `...idempotentRoute`,
 * which also declares the header (checked, and listed in the OpenAPI document). The service in
 * src/idempotency/keys.ts decides; here the request is fingerprinted before the handler runs and
 * its response, a refusal too, recorded before the client sees it.
 */
import { Elysia, t } from "elysia";
import type { App } from "../app";
import { invalid } from "../errors";
import { beginIdempotent, completeIdempotent, fingerprintOf, keyLifetimeMs, maxKeyHeaderLength, maxKeyLength } from "../idempotency/keys";
import { currentRateLimit, rateLimitHeaders } from "../messages/rate-limit";

/** The requests this process runs as the first with their key, until their response is recorded. */
const running = new WeakMap<Request, { organizationId: string; key: string }>();

const keyDescription =
  `Makes a retry safe (draft-ietf-httpapi-idempotency-key-header): a retry with the same key and the same request (method, path, body) within ${keyLifetimeMs / 3_600_000} hours ` +
  "gets the first response again, with `Idempotent-Replayed: true`, and creates nothing; the same key with another request is 422, and while the first is still running 409. " +
  `Keys are per organization; 1 to ${maxKeyLength} printable ASCII characters, a UUID say (a quoted Structured Fields string is unquoted). Responses 429 and 5xx are not kept: a retry runs anew.`;

/** What a replayed response carries besides its first one's body: the send rate limit's headers, as they stand now, for the routes it counts. */
type Replay = "plain" | "rateLimited";

const idempotentRouteOf = <R extends Replay>(replay: R) => ({
  idempotent: replay,
  headers: t.Object(
    {
      "idempotency-key": t.Optional(
        t.String({ minLength: 1, maxLength: maxKeyHeaderLength, pattern: "^[ -~]+$", error: `must be 1 to ${maxKeyLength} printable ASCII characters`, description: keyDescription }),
      ),
    },
    // The other headers stay: Elysia would otherwise drop those the schema does not list (Authorization).
    { additionalProperties: true },
  ),
});

export const idempotentRoute = idempotentRouteOf("plain");
/** A send, reply, forward or draft send: its replay carries the RateLimit headers too, as the first response did (contract: "Both responses"). */
export const idempotentSendRoute = idempotentRouteOf("rateLimited");

/** The 409 of a route with an Idempotency-Key and no conflict of its own. */
export const keyInUse = [409, "A request with this Idempotency-Key is still running"] as const;

/** A Structured Fields string (RFC 8941 §3.3.3) is unquoted; a bare token is the key as it is. */
function keyOf(value: string): string {
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(value);
  return quoted ? quoted[1]!.replace(/\\(["\\])/g, "$1") : value;
}

export const idempotency = (app: App) =>
  new Elysia({ name: "idempotency" }).macro({
    idempotent: (replay: Replay) => ({
      async beforeHandle(context) {
        const header = context.headers["idempotency-key"];
        if (header === undefined) return;
        // The API key guard, which every route using this runs first, resolved it.
        const { organizationId } = context as typeof context & { organizationId: string };
        const key = keyOf(header);
        // The length is the key's, unquoted (a quoted 255-character key is 257 long).
        if (key === "" || key.length > maxKeyLength) throw invalid(`idempotency-key: must be 1 to ${maxKeyLength} printable ASCII characters`);
        const inboxId = (context.params as { inboxId?: string } | undefined)?.inboxId;
        const begun = await beginIdempotent(app, organizationId, key, fingerprintOf(context.request.method, context.path, context.body), inboxId ?? null);
        if (!begun.first) {
          const rateLimit = replay === "rateLimited" ? rateLimitHeaders(await currentRateLimit(app, organizationId, app.clock.now())) : {};
          return new Response(new Uint8Array(begun.body), { status: begun.statusCode, headers: { "content-type": "application/json", "idempotent-replayed": "true", ...rateLimit } });
        }
        running.set(context.request, { organizationId, key });
      },
      // After the handler or the app's error mapper, before the response leaves: a success and a
      // refusal alike, with the status and body the client gets.
      async mapResponse({ request, responseValue, set }) {
        const first = running.get(request);
        if (!first) return;
        running.delete(request);
        await completeIdempotent(app, first.organizationId, first.key, typeof set.status === "number" ? set.status : 200, JSON.stringify(responseValue));
      },
    }),
  });
