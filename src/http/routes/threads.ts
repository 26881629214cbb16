/** `/v1/inboxes/:inboxId/threads`: conversations of an inbox. */
import { Elysia } from "elysia";
import type { App } from "../../app";
import { getThread, listThreads } from "../../messages/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { paginationQuery } from "../pagination";

export const threadRoutes = (app: App) =>
  new Elysia({ prefix: "/v1/inboxes/:inboxId/threads", detail: { tags: ["threads"], security: [{ bearer: [] }] } })
    .use(apiKeyGuard(app))
    .get("", ({ organizationId, params, query }) => listThreads(app, organizationId, params.inboxId, pageOf(query)), {
      query: paginationQuery,
      detail: { summary: "List the threads of an inbox, newest activity first" },
    })
    .get("/:threadId", ({ organizationId, params }) => getThread(app, organizationId, params.inboxId, params.threadId), {
      detail: { summary: "Get a thread with its messages, oldest first" },
    });
