/** `/v1/deliveries`: the outbound queue across the organization's inboxes, with filters. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { listDeliveries } from "../../outbound/deliveries";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { failures, listOf, OutboundDelivery } from "../schemas";

const deliveryQuery = t.Object({
  ...paginationQuery.properties,
  status: t.Optional(t.Union([t.Literal("queued"), t.Literal("delivered"), t.Literal("bounced"), t.Literal("rejected")], { error: "must be queued, delivered, bounced or rejected", description: "only deliveries with this status" })),
  domain: t.Optional(t.String({ minLength: 1, maxLength: 253, error: "must be a domain name of at most 253 characters", description: "only deliveries to recipients on this domain (any case)" })),
  inboxId: t.Optional(t.String({ minLength: 1, maxLength: 64, error: "must be an inbox id", description: "only deliveries of messages this inbox sent" })),
});

export const deliveryRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["outbound"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .get(
      "/deliveries",
      async ({ organizationId, query, request, set, server }) =>
        paged(app, { request, set, server }, await listDeliveries(app, organizationId, { status: query.status, domain: query.domain, inboxId: query.inboxId }, pageOf(query))),
      {
        query: deliveryQuery,
        response: { 200: listOf(OutboundDelivery, "Deliveries, newest first"), ...failures(401, 422, [404, "Inbox not found"]) },
        detail: { summary: "The outbound queue across every inbox: each remote recipient's delivery, newest first, optionally by status, recipient domain or sending inbox" },
      },
    );
