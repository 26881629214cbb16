/** The suppression list: addresses that hard-bounced or complained, which sends skip (rejected). */
import { Elysia } from "elysia";
import type { App } from "../../app";
import { deleteSuppression, getSuppression, listSuppressions } from "../../outbound/suppressions";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { failures, listOf, Suppression } from "../schemas";

export const suppressionRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["suppressions"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .get("/suppressions", async ({ organizationId, query, request, set, server }) => paged(app, { request, set, server }, await listSuppressions(app, organizationId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(Suppression, "Suppressed addresses, newest first"), ...failures(401, 422) },
      detail: { summary: "List suppressed addresses, newest first" },
    })
    .get("/suppressions/:suppressionId", ({ organizationId, params }) => getSuppression(app, organizationId, params.suppressionId), {
      response: { 200: Suppression, ...failures(401, [404, "Suppression not found"]) },
      detail: { summary: "Get one suppression by its id or by the address" },
    })
    .delete("/suppressions/:suppressionId", ({ organizationId, params }) => deleteSuppression(app, organizationId, params.suppressionId), {
      response: { 200: Suppression, ...failures(401, [404, "Suppression not found"]) },
      detail: { summary: "Lift a suppression (by id or address) so the address is sent to again; returns the deleted record" },
    });
