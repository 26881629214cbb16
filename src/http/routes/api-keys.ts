/**
 * API key management, served twice with the same routes: under `/organizations/:organization_id`
 * for a member's access token, and under `/v1` for an API key acting on its own organization.
 */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { addApiKey, deleteApiKey, getApiKey, listApiKeys } from "../../auth/api-keys";
import { pageOf } from "../../page";
import { apiKeyGuard, organizationMemberGuard, type OrganizationGuard } from "../auth";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { ApiKey, bodyFailures, CreatedApiKey, failures, listOf } from "../schemas";

/** The credential of each family, as the document shows it, and the statuses a refused one gets. */
const credentials = {
  accessToken: { security: security.accessToken, denied: [401, 403] as const },
  apiKey: { security: security.apiKey, denied: [401] as const },
};

const keyRoutes = (app: App, prefix: string, guard: OrganizationGuard, { security, denied }: (typeof credentials)[keyof typeof credentials]) =>
  new Elysia({ prefix, detail: { tags: ["api keys"], security } })
    .use(guard)
    .post(
      "/api_keys",
      async ({ organizationId, body, set }) => {
        const key = await addApiKey(app, organizationId, body);
        set.status = 201;
        return key;
      },
      {
        body: t.Object({ name: t.String({ description: "a label for the key" }) }),
        response: { 201: CreatedApiKey, ...failures(...denied, ...bodyFailures) },
        detail: { summary: "Create an API key (the key is shown this once)" },
      },
    )
    .get("/api_keys", async ({ organizationId, query, request, set, server }) => paged(app, { request, set, server }, await listApiKeys(app, organizationId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(ApiKey, "API key records, newest first"), ...failures(...denied, 422) },
      detail: { summary: "List API keys, newest first (never the key values)" },
    })
    .get("/api_keys/:keyId", ({ organizationId, params }) => getApiKey(app, organizationId, params.keyId), {
      response: { 200: ApiKey, ...failures(...denied, [404, "API key not found"]) },
      detail: { summary: "Get one API key record" },
    })
    .delete("/api_keys/:keyId", ({ organizationId, params }) => deleteApiKey(app, organizationId, params.keyId), {
      response: { 200: ApiKey, ...failures(...denied, [404, "API key not found"]) },
      detail: { summary: "Delete (revoke) an API key at once; returns the deleted record" },
    });

export const apiKeyRoutes = (app: App) =>
  new Elysia()
    .use(keyRoutes(app, "/organizations/:organization_id", organizationMemberGuard(app), credentials.accessToken))
    .use(keyRoutes(app, "/v1", apiKeyGuard(app), credentials.apiKey));
