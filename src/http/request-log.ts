/**
 * One log line and one metrics observation per HTTP request: method, route pattern (never the
 * raw path, which holds ids, nor any header, key or token), status, duration, request id and
 * organization. The request id comes from `X-Request-Id` when a trusted proxy sent it, else it is
 * made here; either way it is echoed, so a client's report can be found in the log.
 */
import { Elysia } from "elysia";
import type { App } from "../app";
import { newId } from "../ids";
import { trustedProxies } from "./client-address";

// Long enough for any tracing id (W3C trace ids are 32 hex digits), short and plain enough for a log line.
const FORWARDED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

type RequestStart = { id: string; startedAt: number };

const toolCalls = new WeakSet<Request>();

/**
 * An MCP tool's call of the API, made within the `/mcp` request that is logged and counted: not a
 * request of its own (each tool call was counted twice, its 404 as a REST route's).
 */
export const unlogged = (request: Request): Request => (toolCalls.add(request), request);

export function requestLog(app: App) {
  const trusted = trustedProxies(app.config.trustedProxies);
  const started = new WeakMap<Request, RequestStart>();
  return new Elysia({ name: "request-log" })
    .onRequest(({ request, server, set }) => {
      const forwarded = request.headers.get("x-request-id");
      const peer = server?.requestIP(request)?.address;
      const id = forwarded && peer && trusted(peer) && FORWARDED_REQUEST_ID.test(forwarded) ? forwarded : newId("req");
      started.set(request, { id, startedAt: performance.now() });
      set.headers["x-request-id"] = id;
    })
    .onAfterResponse({ as: "global" }, (context) => {
      const start = started.get(context.request);
      if (!start || toolCalls.has(context.request)) return;
      const seconds = (performance.now() - start.startedAt) / 1000;
      // Unmatched paths are one label value: a scan of random paths must not grow the metrics.
      const route = context.route || "unmatched";
      const method = context.request.method;
      // A route that answers with a Response of its own (MCP's errors, a replay, a 304) leaves set.status as it was.
      const answered = (context as { responseValue?: unknown }).responseValue;
      const status = answered instanceof Response ? answered.status : typeof context.set.status === "number" ? context.set.status : Number(context.set.status) || 200;
      app.metrics.httpRequests.inc({ method, route, status: String(status) });
      app.metrics.httpDuration.observe({ method, route }, seconds);
      const organizationId = (context as { organizationId?: unknown }).organizationId;
      // Health checks come every few seconds from monitors: only worth a line when debugging.
      const log = route === "/health" && status === 200 ? app.log.debug : app.log.info;
      log("http request", {
        method,
        route,
        status,
        ms: Math.round(seconds * 10_000) / 10,
        requestId: start.id,
        ...(typeof organizationId === "string" ? { organizationId } : {}),
      });
    });
}
