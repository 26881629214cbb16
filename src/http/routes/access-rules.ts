/** `/v1/access-rules`: the allow and block lists of the organization and its inboxes, for receiving and for sending. */
import { Elysia, t } from "elysia";
import { createAccessRule, deleteAccessRule, getAccessRule, listAccessRules, maxAccessRules } from "../../access/service";
import type { AccessAction, AccessDirection } from "../../access/rules";
import type { App } from "../../app";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { AccessRule, bodyFailures, failures, listOf } from "../schemas";

// Unions of literals: Elysia fills an absent optional UnionEnum in a query with its first value.
const direction = t.Union([t.Literal("receive"), t.Literal("send")] satisfies { const: AccessDirection }[], {
  error: "must be receive or send",
  description: "receive: senders of mail to the inboxes; send: recipients of mail from them",
});
const action = t.Union([t.Literal("allow"), t.Literal("block")] satisfies { const: AccessAction }[], {
  error: "must be allow or block",
  description: "block wins over allow; with any allow entry, only what an allow entry matches passes",
});

export const accessRuleRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["access rules"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .post(
      "/access-rules",
      async ({ organizationId, body, set }) => {
        const created = await createAccessRule(app, organizationId, body);
        set.status = 201;
        return created;
      },
      {
        body: t.Object({
          direction,
          action,
          value: t.String({ maxLength: 1024, error: "must be an email address or a domain name", description: "an address (name@example.com: also its +tag forms) or a domain name (example.com: also its subdomains)" }),
          inboxId: t.Optional(t.String({ error: "must be an inbox id", description: "only this inbox; without it, every inbox of the organization" })),
        }),
        response: { 201: AccessRule, ...failures(401, ...bodyFailures, [409, "The same entry exists: `error` names it"]) },
        detail: { summary: `Add an allow or block entry (at most ${maxAccessRules} per organization)` },
      },
    )
    .get(
      "/access-rules",
      async ({ organizationId, query, request, set, server }) =>
        paged(app, { request, set, server }, await listAccessRules(app, organizationId, { ...pageOf(query), direction: query.direction, action: query.action, inboxId: query.inboxId })),
      {
        query: t.Object({
          ...paginationQuery.properties,
          direction: t.Optional(direction),
          action: t.Optional(action),
          inboxId: t.Optional(t.String({ description: "only this inbox's entries; empty for the organization-wide ones" })),
        }),
        response: { 200: listOf(AccessRule, "Entries, newest first"), ...failures(401, [404, "Inbox not found"], 422) },
        detail: { summary: "List allow and block entries, newest first, optionally by direction, action or inbox" },
      },
    )
    .get("/access-rules/:ruleId", ({ organizationId, params }) => getAccessRule(app, organizationId, params.ruleId), {
      response: { 200: AccessRule, ...failures(401, [404, "Access rule not found"]) },
      detail: { summary: "Get one allow or block entry" },
    })
    .delete("/access-rules/:ruleId", ({ organizationId, params }) => deleteAccessRule(app, organizationId, params.ruleId), {
      response: { 200: AccessRule, ...failures(401, [404, "Access rule not found"]) },
      detail: { summary: "Remove an allow or block entry; returns the deleted entry" },
    });
