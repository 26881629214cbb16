/**
 * API key management, served twice with the same routes: under `/organizations/:organization_id`
 * for a member's access token, and under `/v1` for an API key acting on its own organization.
 */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { addApiKey, deleteApiKey, getApiKey, listApiKeys } from "../../auth/api-keys";
import { pageOf } from "../../page";
import { apiKeyGuard, organizationMemberGuard, type OrganizationGuard } from "../auth";
import { paginationQuery } from "../pagination";

const keyRoutes = (app: App, prefix: string, guard: OrganizationGuard) =>
  new Elysia({ prefix, detail: { tags: ["api keys"] } })
    .use(guard)
    .post(
      "/api_keys",
      async ({ organizationId, body, set }) => {
        const key = await addApiKey(app, organizationId, body);
        set.status = 201;
        return key;
      },
      { body: t.Object({ name: t.String({ description: "a label for the key" }) }), detail: { summary: "Create an API key (the key is shown this once)" } },
    )
    .get("/api_keys", ({ organizationId, query }) => listApiKeys(app, organizationId, pageOf(query)), {
      query: paginationQuery,
      detail: { summary: "List API keys, newest first (never the key values)" },
    })
    .get("/api_keys/:keyId", ({ organizationId, params }) => getApiKey(app, organizationId, params.keyId), {
      detail: { summary: "Get one API key record" },
    })
    .delete("/api_keys/:keyId", ({ organizationId, params }) => deleteApiKey(app, organizationId, params.keyId), {
      detail: { summary: "Delete (revoke) an API key at once; returns the deleted record" },
    });

export const apiKeyRoutes = (app: App) =>
  new Elysia()
    .use(keyRoutes(app, "/organizations/:organization_id", organizationMemberGuard(app)))
    .use(keyRoutes(app, "/v1", apiKeyGuard(app)));
