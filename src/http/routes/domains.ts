/** Custom domains (contract.md "Paths"): `{domainId}` is the identifier or the domain name. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { createDomain, deleteDomain, domainDnsRecords, getDomain, listDomains, rotateDkimKeys, verifyDomain } from "../../domains/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { paginationQuery } from "../pagination";

export const domainRoutes = (app: App) =>
  new Elysia({ prefix: "/v1/domains", detail: { tags: ["domains"], security: [{ bearer: [] }] } })
    .use(apiKeyGuard(app))
    .post(
      "/",
      async ({ organizationId, body, set }) => {
        const domain = await createDomain(app, organizationId, body);
        set.status = 201;
        return domain;
      },
      {
        body: t.Object({ name: t.String({ description: "the domain name, e.g. example.com (IDN accepted)" }) }),
        detail: { summary: "Add a custom domain; returns it with the DNS records to publish" },
      },
    )
    .get("/", ({ organizationId, query }) => listDomains(app, organizationId, pageOf(query)), {
      query: paginationQuery,
      detail: { summary: "List custom domains, newest first" },
    })
    .get("/:domainId", ({ organizationId, params }) => getDomain(app, organizationId, params.domainId), {
      detail: { summary: "Get a domain by identifier or name" },
    })
    .get("/:domainId/dns", ({ organizationId, params }) => domainDnsRecords(app, organizationId, params.domainId), {
      detail: { summary: "The DNS records to publish, each with the status of its last check" },
    })
    .post("/:domainId/verify", ({ organizationId, params }) => verifyDomain(app, organizationId, params.domainId), {
      detail: { summary: "Look the domain's records up in DNS now; returns the domain" },
    })
    .post("/:domainId/rotate-dkim", ({ organizationId, params }) => rotateDkimKeys(app, organizationId, params.domainId), {
      detail: { summary: "Add new DKIM keys; they sign once their records verify, the old ones stay listed until removed from DNS" },
    })
    .delete("/:domainId", ({ organizationId, params, query }) => deleteDomain(app, organizationId, params.domainId, { force: query.force === "true" }), {
      query: t.Object({ force: t.Optional(t.Union([t.Literal("true"), t.Literal("false")], { error: "must be true or false" })) }),
      detail: { summary: "Delete a domain (409 while inboxes use it, unless force=true deletes them too); returns the deleted domain" },
    });
