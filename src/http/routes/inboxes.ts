/** `/v1/inboxes`: create, list, get, rename and delete inboxes. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { createInbox, deleteInbox, getInbox, listInboxes, updateInbox } from "../../inboxes/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { paginationQuery } from "../pagination";

const name = t.String({ maxLength: 256, error: "must be a string of at most 256 characters" });

export const inboxRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["inboxes"], security: [{ bearer: [] }] } })
    .use(apiKeyGuard(app))
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
        body: t.Object({
          name: t.Optional(name),
          email: t.Optional(t.String({ maxLength: 320, error: "must be an email address such as support@example.com", description: "on the service mail domain; random when left out" })),
        }),
        detail: { summary: "Create an inbox (a random address on the service mail domain unless email is given)" },
      },
    )
    .get("/inboxes", ({ organizationId, query }) => listInboxes(app, organizationId, pageOf(query)), {
      query: paginationQuery,
      detail: { summary: "List inboxes, newest first" },
    })
    .get("/inboxes/:inboxId", ({ organizationId, params }) => getInbox(app, organizationId, params.inboxId), {
      detail: { summary: "Get an inbox" },
    })
    .patch("/inboxes/:inboxId", ({ organizationId, params, body }) => updateInbox(app, organizationId, params.inboxId, body), {
      body: t.Object({ name: t.Optional(t.Union([name, t.Null()], { error: "must be a string of at most 256 characters, or null to remove it" })) }),
      detail: { summary: "Rename an inbox (null or \"\" removes the name); emits inbox.updated" },
    })
    .delete("/inboxes/:inboxId", ({ organizationId, params }) => deleteInbox(app, organizationId, params.inboxId), {
      detail: { summary: "Delete an inbox with its threads and messages; returns it as it was; emits inbox.deleted" },
    });
