/** `/v1/inboxes`: create, list, get, rename and delete inboxes. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { createInbox, deleteInbox, getInbox, listInboxes, updateInbox } from "../../inboxes/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { idempotency, idempotentRoute } from "../idempotency";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { bodyFailures, failures, Inbox, InboxWithCounts, listOf } from "../schemas";

const name = t.String({ maxLength: 256, error: "must be a string of at most 256 characters" });

export const inboxRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["inboxes"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .use(idempotency(app))
    .post(
      "/inboxes",
      async ({ organizationId, body, set }) => {
        const inbox = await createInbox(app, organizationId, body);
        set.status = 201;
        return inbox;
      },
      {
        // Every field is optional, so a request without a body means `{}`.
        transform(context) {
          context.body ??= {};
        },
        ...idempotentRoute,
        body: t.Object(
          {
            name: t.Optional(name),
            email: t.Optional(t.String({ maxLength: 320, error: "must be an email address such as support@example.com", description: "on the service mail domain; random when left out" })),
          },
          { "x-body-optional": true },
        ),
        response: { 201: Inbox, ...failures(401, ...bodyFailures, [409, "Email address already in use, or a request with this Idempotency-Key is still running"]) },
        detail: { summary: "Create an inbox (a random address on the service mail domain unless email is given)" },
      },
    )
    .get("/inboxes", async ({ organizationId, query, request, set, server }) => paged(app, { request, set, server }, await listInboxes(app, organizationId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(InboxWithCounts, "Inboxes, newest first, with their message and unread totals"), ...failures(401, 422) },
      detail: { summary: "List inboxes, newest first, each with its message and unread totals" },
    })
    .get("/inboxes/:inboxId", ({ organizationId, params }) => getInbox(app, organizationId, params.inboxId), {
      response: { 200: InboxWithCounts, ...failures(401, [404, "Inbox not found"]) },
      detail: { summary: "Get an inbox with its message and unread totals" },
    })
    .patch("/inboxes/:inboxId", ({ organizationId, params, body }) => updateInbox(app, organizationId, params.inboxId, body), {
      body: t.Object({ name: t.Optional(t.Union([name, t.Null()], { error: "must be a string of at most 256 characters, or null to remove it" })) }),
      response: { 200: Inbox, ...failures(401, ...bodyFailures, [404, "Inbox not found"]) },
      detail: { summary: "Rename an inbox (null or \"\" removes the name); emits inbox.updated" },
    })
    .delete("/inboxes/:inboxId", ({ organizationId, params }) => deleteInbox(app, organizationId, params.inboxId), {
      response: { 200: Inbox, ...failures(401, [404, "Inbox not found"], [409, "The inbox receives the operator's postmaster mail (INBOXD_POSTMASTER_INBOX)"]) },
      detail: { summary: "Delete an inbox with its threads and messages; returns it as it was; emits inbox.deleted" },
    });
