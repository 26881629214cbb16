import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { eventNames } from "../../events/names";
import { pageOf } from "../../page";
import { createWebhook, deleteWebhook, getWebhook, listAttempts, listWebhooks, retryAttempt, sendTestEvent, updateWebhook } from "../../webhooks/service";
import { apiKeyGuard } from "../auth";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { bodyFailures, CreatedWebhook, failures, listOf, Success, Webhook, WebhookAttempt } from "../schemas";

const url = t.String({ description: "absolute https URL that accepts POST (http and private hosts only with INBOXD_WEBHOOK_ALLOW_PRIVATE=1)" });
const events = t.Array(t.String(), { description: `event names, at least one, from: ${eventNames.join(", ")}` });

export const webhookRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["webhooks"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .post(
      "/webhooks",
      async ({ organizationId, body, set }) => {
        const created = await createWebhook(app, organizationId, body);
        set.status = 201;
        return created;
      },
      {
        body: t.Object({ url, events }),
        response: { 201: CreatedWebhook, ...failures(401, ...bodyFailures) },
        detail: { summary: "Create a webhook (its signing secret is shown this once)" },
      },
    )
    .get("/webhooks", async ({ organizationId, query, request, set, server }) => paged(app, { request, set, server }, await listWebhooks(app, organizationId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(Webhook, "Webhooks, newest first"), ...failures(401, 422) },
      detail: { summary: "List webhooks, newest first" },
    })
    .get("/webhooks/:webhookId", ({ organizationId, params }) => getWebhook(app, organizationId, params.webhookId), {
      response: { 200: Webhook, ...failures(401, [404, "Webhook not found"]) },
      detail: { summary: "Get a webhook" },
    })
    .patch("/webhooks/:webhookId", ({ organizationId, params, body }) => updateWebhook(app, organizationId, params.webhookId, body), {
      body: t.Object({ url: t.Optional(url), events: t.Optional(events), enabled: t.Optional(t.Boolean({ description: "true re-enables a disabled webhook" })) }),
      response: { 200: Webhook, ...failures(401, ...bodyFailures, [404, "Webhook not found"]) },
      detail: { summary: "Change a webhook's URL or events, or disable and re-enable it" },
    })
    .delete("/webhooks/:webhookId", ({ organizationId, params }) => deleteWebhook(app, organizationId, params.webhookId), {
      response: { 200: Webhook, ...failures(401, [404, "Webhook not found"]) },
      detail: { summary: "Delete a webhook; returns the deleted webhook" },
    })
    .post("/webhooks/:webhookId/test", ({ organizationId, params }) => sendTestEvent(app, organizationId, params.webhookId), {
      response: { 200: Success, ...failures(401, [404, "Webhook not found"]) },
      detail: { summary: "Queue a test message.received event for this webhook only" },
    })
    .get("/webhooks/:webhookId/attempts", async ({ organizationId, params, query, request, set, server }) => paged(app, { request, set, server }, await listAttempts(app, organizationId, params.webhookId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(WebhookAttempt, "Delivery attempts, newest first"), ...failures(401, [404, "Webhook not found"], 422) },
      detail: { summary: "List the delivery attempts of a webhook, newest first" },
    })
    .post("/webhooks/:webhookId/attempts/:attemptId/retry", ({ organizationId, params }) => retryAttempt(app, organizationId, params.webhookId, params.attemptId), {
      response: { 200: Success, ...failures(401, [404, "Webhook or attempt not found"]) },
      detail: { summary: "Send the attempt's event again now, as a new attempt with the same event id" },
    });
