/**
 * `/openapi.json`: the OpenAPI 3.1 document of the HTTP API, generated once from the routes: their
 * paths, parameters, request body schemas, response schemas (src/http/schemas.ts), summaries,
 * tags and security. @elysiajs/openapi turns the routes into paths; the rest of this file makes
 * that output a document a strict linter and a client generator accept:
 *
 * - request bodies are `application/json`. The plugin lists a body's media types from the route's
 *   named parsers, and our one parser is a function (body.ts, JSON only), so it listed none
 *   (`content: {}`): the plugin is shown the parser as the `application/json` one it is;
 * - schemas titled in schemas.ts become `#/components/schemas/<title>`, referred to where used;
 * - what only Elysia reads leaves the schemas: `noValidate`, the `error` messages of 422s,
 *   `additionalProperties: true` (JSON Schema's default anyway);
 * - a body that is not JSON (`bytes()` in schemas.ts) is listed under its own media type;
 * - a route registered as `/` under a prefix is listed without the trailing slash, as it is served;
 * - info (the package version), servers, security schemes and tags are added.
 */
import { toOpenAPISchema } from "@elysiajs/openapi/openapi";
import type { AnyElysia } from "elysia";
import { version } from "../version";

/** The credentials, as `security` of the route groups names them. */
export const security = {
  apiKey: [{ apiKey: [] }],
  accessToken: [{ accessToken: [] }],
  metricsToken: [{ metricsToken: [] }],
  none: [],
};

const securitySchemes = {
  apiKey: {
    type: "http",
    scheme: "bearer",
    description: "An API key (`ik_...`) of the organization, from registration or `POST /v1/api_keys`: every path under `/v1`.",
  },
  accessToken: {
    type: "http",
    scheme: "bearer",
    description: "An access token from `POST /auth/login` or registration, valid 7 days: the key management under `/organizations`.",
  },
  metricsToken: { type: "http", scheme: "bearer", description: "The operator's INBOXD_METRICS_TOKEN: `/metrics` only." },
};

const tags = [
  { name: "accounts", description: "Registration and login" },
  { name: "api keys", description: "API keys of an organization, with an access token under `/organizations` or with an API key under `/v1`" },
  { name: "inboxes", description: "Addresses that send and receive" },
  { name: "messages", description: "Send, reply, forward, list, search and read messages" },
  { name: "threads", description: "Conversations of an inbox" },
  { name: "drafts", description: "Messages composed ahead of sending, sent on request or scheduled with sendAt" },
  { name: "webhooks", description: "Events POSTed to your URL, signed by the Standard Webhooks scheme" },
  { name: "events", description: "The same events as a live stream (Server-Sent Events), resumable by event id" },
  { name: "domains", description: "Custom domains and the DNS records they need" },
  { name: "outbound", description: "The outbound queue across every inbox: each remote recipient's delivery" },
  { name: "suppressions", description: "Addresses sends skip after a hard bounce or a complaint" },
  { name: "health", description: "Health check and metrics" },
];

const description = [
  "The HTTP API of inboxd, a self-hosted email inbox service.",
  "",
  "Authentication: `Authorization: Bearer <credential>`, an API key under `/v1`, an access token under `/organizations`; the two kinds never mix.",
  "Every failure is `{\"error\": string}` with its status. Lists are plain arrays, newest first, paged by `page` and `per`.",
].join("\n");

type Json = Record<string, any>;

/** Keywords only Elysia reads (see the file's comment), removed from every schema. */
function cleanSchema(schema: Json): void {
  delete schema.noValidate;
  if (typeof schema.error === "string") delete schema.error;
  if (schema.additionalProperties === true) delete schema.additionalProperties;
}

/**
 * Cleans the schema and those within it, and moves each titled one to `components`, leaving a
 * `$ref` in its place. Two uses of one title must be one schema (their descriptions may differ: the
 * component then has none).
 */
function visitSchema(schema: Json, components: Json): Json {
  if (!schema || typeof schema !== "object") return schema;
  cleanSchema(schema);
  if (schema.properties) for (const key of Object.keys(schema.properties)) schema.properties[key] = visitSchema(schema.properties[key], components);
  for (const key of ["items", "additionalProperties", "not"]) if (schema[key] && typeof schema[key] === "object") schema[key] = visitSchema(schema[key], components);
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) if (Array.isArray(schema[key])) schema[key] = schema[key].map((item: Json) => visitSchema(item, components));
  const title = schema.title;
  if (typeof title !== "string") return schema;
  const { description: _, ...content } = schema;
  const known = components[title];
  if (!known) {
    components[title] = { ...schema };
  } else {
    const { description: knownDescription, ...knownContent } = known;
    if (JSON.stringify(knownContent) !== JSON.stringify(content)) throw new Error(`OpenAPI: two different schemas are titled ${title}`);
    if (knownDescription !== schema.description) delete known.description;
  }
  return { $ref: `#/components/schemas/${title}` };
}

function visitOperation(operation: Json, components: Json): void {
  for (const parameter of operation.parameters ?? []) parameter.schema = visitSchema(parameter.schema, components);
  const body = operation.requestBody;
  if (body) {
    if (body.description === undefined) delete body.description;
    for (const media of Object.values<Json>(body.content ?? {})) {
      if (media.schema?.["x-body-optional"]) {
        body.required = false;
        delete media.schema["x-body-optional"];
      }
      media.schema = visitSchema(media.schema, components);
    }
  }
  for (const response of Object.values<Json>(operation.responses ?? {})) {
    for (const header of Object.values<Json>(response.headers ?? {})) header.schema = visitSchema(header.schema, components);
    // A response without a body (`t.Void()`, a 204): the plugin writes its schema where the media types belong.
    if (response.content?.type === "void") delete response.content;
    const content: Json = response.content ?? {};
    for (const [mediaType, media] of Object.entries<Json>(content)) {
      const own = media.schema?.contentMediaType;
      if (typeof own === "string" && own !== mediaType) {
        delete content[mediaType];
        content[own] = media;
      }
      media.schema = visitSchema(media.schema, components);
    }
  }
}

/** The document of the app's routes (every route must be added before the first call). */
export function openApiDocument(http: AnyElysia): Json {
  // Every route with a body takes JSON, through the app's one parser (see the file's comment).
  // The two methods the plugin reads (protected in Elysia's types, public in its code).
  const app = http as unknown as { getGlobalRoutes(): Array<{ hooks?: Json }>; getGlobalDefinitions?(): unknown };
  const routes = app.getGlobalRoutes().map((route) => (route.hooks?.body ? { ...route, hooks: { ...route.hooks, parse: [{ fn: "application/json" }] } } : route));
  const view = { getGlobalRoutes: () => routes, getGlobalDefinitions: () => app.getGlobalDefinitions?.() } as unknown as AnyElysia;
  const generated = toOpenAPISchema(view, { methods: ["options"] }, undefined, undefined, "3.1.0");
  // A copy of its own: the generated schemas share parts with the routes' TypeBox schemas.
  const paths: Json = JSON.parse(JSON.stringify(generated.paths));
  const schemas: Json = {};
  const listed: Json = {};
  for (const [path, item] of Object.entries<Json>(paths)) {
    for (const operation of Object.values<Json>(item)) visitOperation(operation, schemas);
    listed[path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path] = item;
  }
  return {
    openapi: "3.1.0",
    info: { title: "inboxd API", version, description },
    servers: [{ url: "/", description: "this inboxd server" }],
    tags,
    paths: listed,
    components: { schemas, securitySchemes },
  };
}
