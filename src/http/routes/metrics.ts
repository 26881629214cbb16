import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { App } from "../../app";
import { notFound, unauthorized } from "../../errors";
import { bearerToken } from "../auth";
import { security } from "../openapi";
import { bytes, failures } from "../schemas";

/** The Prometheus scrape: text format, the registry's content type. */
export async function metricsResponse(app: App): Promise<Response> {
  return new Response(await app.metrics.scrape(), { headers: { "content-type": app.metrics.registry.contentType } });
}

const sameSecret = (given: string, expected: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

/**
 * On the API port, `/metrics` exists only with INBOXD_METRICS_TOKEN and answers only to that
 * bearer token: queue depths and route names are not for the public. INBOXD_METRICS_BIND serves
 * it on a listener of its own instead (serve.ts).
 */
export const metricsRoutes = (app: App) =>
  new Elysia().get(
    "/metrics",
    ({ headers }) => {
      const token = app.config.metricsToken;
      if (!token) throw notFound("Not found");
      if (!sameSecret(bearerToken(headers.authorization), token)) throw unauthorized("Invalid metrics token");
      return metricsResponse(app);
    },
    {
      response: {
        200: bytes("text/plain", "Prometheus text format"),
        ...failures([401, "Missing or wrong metrics token"], [404, "No INBOXD_METRICS_TOKEN: /metrics is not served here"]),
      },
      detail: { summary: "Prometheus metrics (with INBOXD_METRICS_TOKEN)", tags: ["health"], security: security.metricsToken },
    },
  );
