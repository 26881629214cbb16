/** The whole HTTP surface on one screen: envelope (CORS, body, errors), the API reference, then one plugin per resource. */
import { cors } from "@elysiajs/cors";
import { Elysia } from "elysia";
import type { App } from "../app";
import { invalid, ServiceError } from "../errors";
import { callerCheckOf } from "./auth";
import { parseJsonBody, urlHoldsNul } from "./body";
import { BAD_HOST, requestUrl } from "./request-url";
import { listHeaders } from "./pagination";
import { messageMemoryGuard, withinCountedRequest } from "./message-memory";
import { toErrorReply } from "./errors";
import { apiKeyRoutes } from "./routes/api-keys";
import { authRoutes } from "./routes/auth";
import { healthRoutes } from "./routes/health";
import { metricsRoutes } from "./routes/metrics";
import { requestLog, unlogged } from "./request-log";
import { inboxRoutes } from "./routes/inboxes";
import { messageRoutes } from "./routes/messages";
import { draftRoutes } from "./routes/drafts";
import { threadRoutes } from "./routes/threads";
import { webhookRoutes } from "./routes/webhooks";
import { eventRoutes } from "./routes/events";
import { domainRoutes } from "./routes/domains";
import { suppressionRoutes } from "./routes/suppressions";
import { deliveryRoutes } from "./routes/deliveries";
import { accessRuleRoutes } from "./routes/access-rules";
import { consoleRoutes } from "./routes/console";
import { docsRoutes } from "./routes/docs";
import { mcpRoutes } from "./routes/mcp";
import { openApiDocument } from "./openapi";

export const rateLimitHeaders = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy", "Retry-After"];

/** What a listener adds to the API: HTTPS its HSTS header and the MTA-STS policy (src/certs/listeners.ts). */
export interface HttpAppOptions {
  /** Runs first for every request, before the API's checks; a Response it gives is the answer. */
  beforeEveryRequest?: (request: Request, headers: Record<string, string | number>) => Promise<Response | undefined>;
}

export function createHttpApp(app: App, { beforeEveryRequest }: HttpAppOptions = {}) {
  // Elysia's builder methods return the instance itself: `http.routes` holds every route added below.
  const http = new Elysia();
  /** The route of a method and path pattern, as Elysia keeps it (its schemas and hooks). */
  const routeOf = (method: string, path: string) => http.routes.find((route) => route.method === method && route.path === path);
  const messageMemory = messageMemoryGuard(app);
  /** `/openapi.json`, made from the routes on its first request. */
  let openApiJson: string | undefined;
  return http
    // First, so that an answer given before the routes (an MTA-STS policy, a CORS preflight) carries its X-Request-Id too.
    .use(requestLog(app))
    .onRequest(({ request, set }) => beforeEveryRequest?.(request, set.headers))
    .use(messageMemory.release)
    .use(
      cors({
        origin: "*",
        credentials: true,
        methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        // Mcp-Protocol-Version: what browser-based MCP clients send to /mcp after initializing (MCP Streamable HTTP).
        allowedHeaders: ["Authorization", "Content-Type", "Last-Event-ID", "Mcp-Protocol-Version", "Idempotency-Key"],
        exposeHeaders: [...rateLimitHeaders, "X-Request-Id", ...listHeaders, "Idempotent-Replayed"],
      }),
    )
    .onRequest(({ request }) => {
      // RFC 9112 §3.2: a request without a Host, or with one no URL can hold, is 400 (Bun then gives only its path).
      const url = requestUrl(request);
      if (!url) throw new ServiceError("malformed", BAD_HOST);
      if (urlHoldsNul(request.url)) throw new ServiceError("malformed", "The URL must not hold NUL (%00)");
      // No parameter takes several values: the last one was read, and a bad one before it passed unchecked.
      const repeated = repeatedParameter(url.searchParams);
      if (repeated !== undefined) throw invalid(`${JSON.stringify(repeated.slice(0, 100))}: a query parameter given more than once`);
    })
    .onParse(async ({ request, contentType, route, headers, params }) => {
      const credentialCheckOfRoute = () => {
        const found = routeOf(request.method, route);
        const check = found && callerCheckOf(found);
        return check && (() => check({ request, headers, params }));
      };
      const limit = await messageMemory.admit(request, credentialCheckOfRoute);
      return parseJsonBody(request, contentType, limit, () => routeOf(request.method, route)?.hooks.body !== undefined);
    })
    .onError(({ code, error, set, request }) => {
      const reply = toErrorReply(code, error, app.log, `${request.method} ${requestUrl(request)?.pathname ?? request.url}`);
      set.status = reply.status;
      Object.assign(set.headers, reply.headers ?? {});
      return { error: reply.error };
    })
    .use(docsRoutes(() => (openApiJson ??= JSON.stringify(openApiDocument(http)))))
    .use(healthRoutes(app))
    .use(metricsRoutes(app))
    .use(authRoutes(app))
    .use(apiKeyRoutes(app))
    .use(inboxRoutes(app))
    .use(messageRoutes(app, app.largeResponses))
    .use(draftRoutes(app))
    .use(threadRoutes(app, app.largeResponses))
    .use(webhookRoutes(app))
    .use(eventRoutes(app))
    .use(domainRoutes(app))
    .use(suppressionRoutes(app))
    .use(deliveryRoutes(app))
    .use(accessRuleRoutes(app))
    // The MCP tools call this app itself, in process: `http.handle` is read when a tool runs, once every route is added.
    .use(mcpRoutes(app, (request) => http.handle(unlogged(withinCountedRequest(request)))))
    .use(consoleRoutes());
}

function repeatedParameter(parameters: URLSearchParams): string | undefined {
  const seen = new Set<string>();
  for (const name of parameters.keys()) {
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return undefined;
}
