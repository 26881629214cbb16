/** `/v1/inboxes/:inboxId/threads`: conversations of an inbox. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { getThread, listThreads } from "../../messages/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import type { Downloads } from "../download";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { labelQuery } from "../labels";
import { attachmentContentQuery, failures, listOf, Thread, ThreadWithMessages } from "../schemas";

export const threadRoutes = (app: App, serve: Downloads) =>
  new Elysia({ prefix: "/v1/inboxes/:inboxId/threads", detail: { tags: ["threads"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .get("", async ({ organizationId, params, query, request, set, server }) => paged(app, { request, set, server }, await listThreads(app, organizationId, params.inboxId, { ...pageOf(query), label: query.label })), {
      query: t.Object({ ...paginationQuery.properties, label: t.Optional(labelQuery("only the threads with at least one message with this label")) }),
      response: { 200: listOf(Thread, "Threads, newest activity first"), ...failures(401, [404, "Inbox not found"], 422) },
      detail: { summary: "List the threads of an inbox, newest activity first, optionally only those with a label" },
    })
    .get("/:threadId", async ({ organizationId, caller, params, query }) => serve.json(caller, await getThread(app, organizationId, params.inboxId, params.threadId, query.attachmentContent !== "false")), {
      query: attachmentContentQuery,
      response: { 200: ThreadWithMessages, ...failures(401, [404, "Thread not found"], 422, [429, "Too many large downloads in flight for this organization"]) },
      detail: { summary: "Get a thread with its messages, oldest first (attachmentContent=false: their attachments without their content)" },
    });
