/** Custom domains (docs/api.md "Paths"): `{domainId}` is the identifier or the domain name. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { createDomain, deleteDomain, domainDnsRecords, getDomain, listDomains, listTlsReports, rotateDkimKeys, verifyDomain } from "../../domains/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { bodyFailures, DnsRecord, Domain, failures, listOf, TlsReport } from "../schemas";

export const domainRoutes = (app: App) =>
  new Elysia({ prefix: "/v1/domains", detail: { tags: ["domains"], security: security.apiKey } })
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
        response: { 201: Domain, ...failures(401, ...bodyFailures, [409, "The domain exists in this organization, or another holds it and this one has not published the claim record the message names"]) },
        detail: { summary: "Add a custom domain; returns it with the DNS records to publish. Another organization's claim on the name moves here once the name publishes this organization's claim record (the 409 names it)" },
      },
    )
    .get("/", async ({ organizationId, query, request, set, server }) => paged(app, { request, set, server }, await listDomains(app, organizationId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(Domain, "Domains, newest first"), ...failures(401, 422) },
      detail: { summary: "List custom domains, newest first" },
    })
    .get("/:domainId", ({ organizationId, params }) => getDomain(app, organizationId, params.domainId), {
      response: { 200: Domain, ...failures(401, [404, "Domain not found"]) },
      detail: { summary: "Get a domain by identifier or name" },
    })
    .get("/:domainId/dns", async ({ organizationId, params, query, request, set, server }) => paged(app, { request, set, server }, await domainDnsRecords(app, organizationId, params.domainId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(DnsRecord, "The records, each with the result of its last look-up"), ...failures(401, [404, "Domain not found"], 422) },
      detail: { summary: "The DNS records to publish, each with the status of its last check" },
    })
    .get("/:domainId/tls-reports", async ({ organizationId, params, query, request, set, server }) => paged(app, { request, set, server }, await listTlsReports(app, organizationId, params.domainId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(TlsReport, "TLS reports, newest period first"), ...failures(401, [404, "Domain not found"], 422) },
      detail: { summary: "List the TLS reports (RFC 8460) other mail systems sent about the domain, newest first" },
    })
    .post("/:domainId/verify", ({ organizationId, params }) => verifyDomain(app, organizationId, params.domainId), {
      response: { 200: Domain, ...failures(401, [404, "Domain not found"]) },
      detail: { summary: "Look the domain's records up in DNS now; returns the domain" },
    })
    .post("/:domainId/rotate-dkim", ({ organizationId, params }) => rotateDkimKeys(app, organizationId, params.domainId), {
      response: { 200: Domain, ...failures(401, [404, "Domain not found"]) },
      detail: { summary: "Add new DKIM keys; they sign once their records verify, the old ones stay listed until removed from DNS" },
    })
    .delete("/:domainId", ({ organizationId, params, query }) => deleteDomain(app, organizationId, params.domainId, { force: query.force === "true" }), {
      query: t.Object({ force: t.Optional(t.Union([t.Literal("true"), t.Literal("false")], { error: "must be true or false" })) }),
      response: { 200: Domain, ...failures(401, [404, "Domain not found"], [409, "Inboxes use the domain: delete them first, or pass force=true (never the operator's postmaster inbox)"], 422) },
      detail: { summary: "Delete a domain (409 while inboxes use it, unless force=true deletes them too); returns the deleted domain" },
    });
