/** The suppression list: addresses that hard-bounced or complained, which sends skip (rejected). */
import { Elysia } from "elysia";
import type { App } from "../../app";
import { deleteSuppression, getSuppression, listSuppressions } from "../../outbound/suppressions";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { paginationQuery } from "../pagination";

export const suppressionRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["suppressions"] } })
    .use(apiKeyGuard(app))
    .get("/suppressions", ({ organizationId, query }) => listSuppressions(app, organizationId, pageOf(query)), {
      query: paginationQuery,
      detail: { summary: "List suppressed addresses, newest first" },
    })
    .get("/suppressions/:suppressionId", ({ organizationId, params }) => getSuppression(app, organizationId, params.suppressionId), {
      detail: { summary: "Get one suppression by its id or by the address" },
    })
    .delete("/suppressions/:suppressionId", ({ organizationId, params }) => deleteSuppression(app, organizationId, params.suppressionId), {
      detail: { summary: "Lift a suppression (by id or address) so the address is sent to again; returns the deleted record" },
    });
