/**
 * `/openapi.json` is the truth: a strict linter (Redocly's recommended rules) finds no error in it;
 * every route's real responses, successes and failures, validate against the schemas it gives for
 * their status (ajv, with undocumented fields refused); responses are the services' objects byte
 * for byte (the schemas change nothing); and a client generated from it by openapi-typescript,
 * driven by openapi-fetch, type-checks and sends a message, lists it and reads its thread.
 *
 * The client's types are generated here, from the document the server serves, rather than checked
 * in: a checked-in file would need regenerating by hand after every route change, and a stale one
 * would test an old document.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json";
import { getDomain } from "../../src/domains/service";
import { newId } from "../../src/ids";
import { getInbox } from "../../src/inboxes/service";
import { getMessage, getThread } from "../../src/messages/service";
import { getWebhook } from "../../src/webhooks/service";
import { eventually, register, repoRoot, startTestServer, testPassword, type ApiResponse, type Registered, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { sendMail } from "../smtp/mail-client";

const metricsToken = "metrics-secret-for-the-openapi-test";
const methods = ["get", "post", "put", "patch", "delete"] as const;

let dns: DnsServer;
let receiver: WebhookReceiver;
let server: TestServer;
let document: any;
/** Under the repository (ignored by git), so that files there resolve the project's node_modules. */
let work: string;

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = startWebhookReceiver();
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_METRICS_TOKEN: metricsToken } });
  const res = await fetch(`${server.api.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  document = await res.json();
  mkdirSync(join(repoRoot, ".tmp"), { recursive: true });
  work = mkdtempSync(join(repoRoot, ".tmp", "openapi-test-"));
});

afterAll(async () => {
  await server?.cleanup();
  await receiver?.close();
  await dns?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const operations = () =>
  Object.entries<any>(document.paths).flatMap(([path, item]) => methods.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] })));

describe("the document", () => {
  test("is OpenAPI 3.1 with the package version, a server and both credentials", () => {
    expect(document.openapi).toBe("3.1.0");
    expect(document.info.version).toBe(pkg.version);
    expect(document.servers.length).toBeGreaterThan(0);
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.components.securitySchemes.accessToken).toMatchObject({ type: "http", scheme: "bearer" });
  });

  test("every operation has a summary, security, a success and an {error} response for each failure", () => {
    const errorRef = { $ref: "#/components/schemas/Error" };
    expect(document.components.schemas.Error).toMatchObject({ type: "object", required: ["error"], additionalProperties: false });
    expect(operations().length).toBeGreaterThan(40);
    // API paths only: not the console, this document or its page.
    expect(Object.keys(document.paths).filter((path) => !/^\/(v1|auth|organizations|health|metrics)\b/.test(path))).toEqual([]);
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.summary, where).toBeString();
      expect(operation.security, where).toBeArray();
      if (path.startsWith("/v1/")) expect(operation.security, where).toEqual([{ apiKey: [] }]);
      if (path.startsWith("/organizations/")) expect(operation.security, where).toEqual([{ accessToken: [] }]);
      const statuses = Object.keys(operation.responses ?? {});
      expect(statuses.some((status) => status.startsWith("2")), where).toBe(true);
      for (const status of statuses.filter((status) => Number(status) >= 400)) {
        expect(operation.responses[status].content["application/json"].schema, `${where} ${status}`).toEqual(errorRef);
      }
      if (path.startsWith("/v1/") || path.startsWith("/organizations/")) expect(statuses, where).toContain("401");
    }
  });

  test("every request body is JSON with its schema", () => {
    const withBodies = operations().filter(({ operation }) => operation.requestBody);
    expect(withBodies.length).toBeGreaterThanOrEqual(11);
    for (const { path, method, operation } of withBodies) {
      expect(Object.keys(operation.requestBody.content), `${method} ${path}`).toEqual(["application/json"]);
      const schema = operation.requestBody.content["application/json"].schema;
      expect(schema.type === "object" || schema.$ref !== undefined, `${method} ${path}`).toBe(true);
    }
    // An inbox needs no body at all; registration does.
    expect(document.paths["/v1/inboxes"].post.requestBody.required).toBe(false);
    expect(document.paths["/auth/register"].post.requestBody.required).toBe(true);
    // A paged list says where its paging is; a send, its rate limit.
    expect(Object.keys(document.paths["/v1/inboxes"].get.responses["200"].headers)).toEqual(["Link", "X-Total-Count"]);
    expect(Object.keys(document.paths["/v1/inboxes/{inboxId}/messages/send"].post.responses["201"].headers)).toContain("RateLimit-Remaining");
    expect(document.paths["/v1/inboxes/{inboxId}/messages/send"].post.requestBody.content["application/json"].schema.required).toEqual(["to", "subject", "text", "html"]);
  });

  test("a strict linter (Redocly, recommended rules) reports no error", async () => {
    const folder = join(work, "lint");
    mkdirSync(folder);
    writeFileSync(join(folder, "openapi.json"), JSON.stringify(document, null, 2));
    writeFileSync(join(folder, "redocly.yaml"), "extends:\n  - recommended\n");
    const cli = join(repoRoot, "node_modules/@redocly/cli/bin/cli.js");
    const runtime = Bun.which("node") ?? process.execPath;
    const lint = Bun.spawn([runtime, cli, "lint", "openapi.json", "--format=json"], {
      cwd: folder,
      // No telemetry, no update check: nothing leaves the machine.
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(lint.stdout).text(), new Response(lint.stderr).text(), lint.exited]);
    const report = JSON.parse(out.slice(out.indexOf("{")));
    const problems = report.problems.map((problem: any) => `${problem.severity} ${problem.ruleId}: ${problem.message} at ${problem.location?.[0]?.pointer}`);
    console.log(`redocly lint: ${report.totals.errors} errors, ${report.totals.warnings} warnings${problems.length ? `\n  ${problems.join("\n  ")}` : ""}`);
    expect(report.totals.errors, `${problems.join("\n")}\n${err}`).toBe(0);
  }, 60_000);
});

// --- Real responses against the document ------------------------------------------------------

/** ajv over a copy of the document where every object schema refuses fields it does not list. */
function responseValidator() {
  const strict = structuredClone(document);
  const close = (node: any): void => {
    if (Array.isArray(node)) return node.forEach(close);
    if (!node || typeof node !== "object") return;
    if (node.type === "object" && Object.keys(node.properties ?? {}).length > 0 && !("additionalProperties" in node)) node.additionalProperties = false;
    for (const value of Object.values(node)) close(value);
  };
  close(strict);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(strict, "openapi.json");
  return ajv;
}

const pointerToken = (token: string) => token.replaceAll("~", "~0").replaceAll("/", "~1");

/** The documented path a request path is an instance of: fixed segments before parameters. */
function templateOf(method: string, path: string): string {
  const matches = Object.keys(document.paths)
    .filter((template) => document.paths[template][method])
    .filter((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(path))
    .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  if (!matches[0]) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  return matches[0];
}

/** Operations by `METHOD template`, with the statuses their real responses were validated at. */
const seen = new Map<string, Set<number>>();
let ajv: Ajv2020;
const validators: Record<string, ReturnType<Ajv2020["compile"]>> = {};

/** Checks a real response against the document: its status is listed, its body fits the schema. */
function conforms(method: string, path: string, status: number, headers: Headers, text: string) {
  ajv ??= responseValidator();
  const verb = method.toLowerCase();
  const template = templateOf(verb, path.split("?")[0]!);
  const where = `${method} ${template} → ${status}`;
  const response = document.paths[template][verb].responses[String(status)];
  expect(response, `${where} is documented`).toBeDefined();
  const [mediaType] = Object.keys(response.content ?? {});
  if (mediaType === undefined) {
    expect(text, `${where} has no body`).toBe("");
  } else if (mediaType === "application/json") {
    expect(headers.get("content-type"), where).toStartWith("application/json");
    const pointer = ["paths", template, verb, "responses", String(status), "content", "application/json", "schema"].map(pointerToken).join("/");
    const validate = (validators[pointer] ??= ajv.compile({ $ref: `openapi.json#/${pointer}` }));
    const body = JSON.parse(text);
    if (!validate(body)) throw new Error(`${where}: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 2000)}`);
  } else if (mediaType !== "*/*") {
    expect(headers.get("content-type"), where).toStartWith(mediaType!);
  }
  const key = `${verb.toUpperCase()} ${template}`;
  seen.set(key, (seen.get(key) ?? new Set()).add(status));
}

interface Call {
  body?: unknown;
  rawBody?: string;
  token?: string;
  headers?: Record<string, string>;
}

/** A request whose response must have `status` and conform to the document; the parsed body and the text. */
async function call<T = any>(method: string, path: string, status: number, options: Call = {}): Promise<ApiResponse<T> & { text: string }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  const res = await fetch(server.api.baseUrl + path, { method, headers, body });
  const text = await res.text();
  if (res.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${res.status} ${text.slice(0, 500)}`);
  conforms(method, path, res.status, res.headers, text);
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body: parsed, text };
}

describe("real responses fit the document", () => {
  let account: Registered;
  let key: string;
  let org: string;
  let second: { id: string; email: string };
  let sent: any;
  let received: any;

  test("accounts, health and metrics", async () => {
    const username = `openapi-${newId("t")}@example.com`;
    account = (await call("POST", "/auth/register", 201, { body: { firstName: "Open", lastName: "Api", username, password: testPassword } })).body;
    key = account.apiKey.key;
    org = account.organization.id;
    await call("POST", "/auth/register", 409, { body: { firstName: "Open", lastName: "Api", username, password: testPassword } });
    await call("POST", "/auth/register", 422, { body: { firstName: "Open", lastName: "Api", username: "not an email", password: testPassword } });
    await call("POST", "/auth/register", 400, { rawBody: "{", headers: { "content-type": "application/json" } });
    const { token } = (await call("POST", "/auth/login", 200, { body: { username, password: testPassword } })).body;
    await call("POST", "/auth/login", 401, { body: { username, password: "wrong password, surely" } });
    await call("POST", "/auth/logout", 200, { token });
    await call("POST", "/auth/logout", 401, { token });
    await call("GET", "/health", 200);
    await call("GET", "/metrics", 200, { token: metricsToken });
    await call("GET", "/metrics", 401, { token: "nope" });
  });

  test("API keys, under /v1 and under /organizations", async () => {
    const created = (await call("POST", "/v1/api_keys", 201, { body: { name: "ci" }, token: key })).body;
    await call("GET", "/v1/api_keys", 200, { token: key });
    await call("GET", `/v1/api_keys/${created.id}`, 200, { token: key });
    await call("DELETE", `/v1/api_keys/${created.id}`, 200, { token: key });
    await call("GET", `/v1/api_keys/${created.id}`, 404, { token: key });
    await call("GET", "/v1/api_keys?per=0", 422, { token: key });
    const base = `/organizations/${org}/api_keys`;
    const other = (await call("POST", base, 201, { body: { name: "other" }, token: account.token })).body;
    await call("GET", base, 200, { token: account.token });
    await call("GET", `${base}/${other.id}`, 200, { token: account.token });
    await call("DELETE", `${base}/${other.id}`, 200, { token: account.token });
    await call("GET", base, 401, { token: key });
    const stranger = await register(server.api);
    await call("GET", base, 403, { token: stranger.token });
  });

  test("inboxes", async () => {
    second = (await call("POST", "/v1/inboxes", 201, { body: { name: "Second" }, token: key })).body;
    const bare = (await call("POST", "/v1/inboxes", 201, { token: key })).body;
    await call("POST", "/v1/inboxes", 409, { body: { email: second.email }, token: key });
    await call("POST", "/v1/inboxes", 422, { body: { name: 3 }, token: key });
    await call("POST", "/v1/inboxes", 400, { rawBody: "a=b", headers: { "content-type": "application/x-www-form-urlencoded" }, token: key });
    await call("GET", "/v1/inboxes", 200, { token: key });
    await call("GET", "/v1/inboxes?per=1000", 422, { token: key });
    await call("GET", "/v1/inboxes", 401);
    await call("GET", "/v1/inboxes", 401, { token: "ik_not_a_key" });
    await call("GET", `/v1/inboxes/${second.id}`, 200, { token: key });
    await call("GET", "/v1/inboxes/inb_nope", 404, { token: key });
    await call("PATCH", `/v1/inboxes/${bare.id}`, 200, { body: { name: "Renamed" }, token: key });
    await call("PATCH", `/v1/inboxes/${bare.id}`, 200, { body: { name: null }, token: key });
    await call("DELETE", `/v1/inboxes/${bare.id}`, 200, { token: key });
  });

  test("messages and threads", async () => {
    const inbox = account.inbox.id;
    const attachment = { content: Buffer.from("attached text\n").toString("base64"), name: "notes.txt", contentType: "text/plain" };
    sent = (await call("POST", `/v1/inboxes/${inbox}/messages/send`, 201, {
      body: { to: [second.email], cc: [], subject: "Conforming", text: "Plain", html: "<p>HTML</p>", labels: ["test"], attachments: [attachment] },
      token: key,
    })).body;
    // A remote recipient: a delivery record, which the empty DNS zone ends as rejected.
    const remote = (await call("POST", `/v1/inboxes/${inbox}/messages/send`, 201, { body: { to: ["someone@example.com"], subject: "Away", text: "t", html: "" }, token: key })).body;
    await call("POST", `/v1/inboxes/${inbox}/messages/send`, 422, { body: { to: [], subject: "s", text: "t", html: "h" }, token: key });
    await call("POST", "/v1/inboxes/inb_nope/messages/send", 404, { body: { to: ["a@example.com"], subject: "s", text: "t", html: "h" }, token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages?query=Conforming`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages?query=${encodeURIComponent("/[/")}`, 422, { token: key });
    await call("GET", "/v1/inboxes/inb_nope/messages", 404, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages/${sent.id}`, 200, { token: key });
    await eventually("the remote delivery to end", async () => (await call("GET", `/v1/inboxes/${inbox}/messages/${remote.id}`, 200, { token: key })).body, (message) => message.deliveries?.[0]?.status !== "queued");
    await call("GET", `/v1/inboxes/${inbox}/messages/msg_nope`, 404, { token: key });
    await call("GET", "/v1/deliveries", 200, { token: key });
    await call("GET", `/v1/deliveries?inboxId=${inbox}&domain=example.com&status=rejected`, 200, { token: key });
    await call("GET", "/v1/deliveries?status=lost", 422, { token: key });
    await call("GET", "/v1/deliveries?inboxId=inb_nope", 404, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages/${sent.id}/raw`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages/${sent.id}/attachments/${sent.attachments[0].id}`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages/${sent.id}/attachments/att_nope`, 404, { token: key });
    await call("PATCH", `/v1/inboxes/${inbox}/messages/${sent.id}`, 200, { body: { addLabels: ["checked"], removeLabels: ["test"] }, token: key });
    await call("PATCH", `/v1/inboxes/${inbox}/messages/${sent.id}`, 422, { body: { labels: ["a"], addLabels: ["b"] }, token: key });
    await call("PATCH", `/v1/inboxes/${inbox}/messages/${sent.id}`, 200, { body: { read: false }, token: key });
    await call("PATCH", `/v1/inboxes/${inbox}/messages/msg_nope`, 404, { body: { labels: [] }, token: key });
    await call("GET", `/v1/inboxes/${inbox}/messages?label=checked`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/threads?label=checked`, 200, { token: key });

    const copies = (await call("GET", `/v1/inboxes/${second.id}/messages`, 200, { token: key })).body;
    received = copies[0];
    await call("POST", `/v1/inboxes/${second.id}/messages/${received.id}/reply`, 201, { body: { text: "Thanks", html: "<p>Thanks</p>" }, token: key });
    await call("POST", `/v1/inboxes/${second.id}/messages/msg_nope/reply`, 404, { body: { text: "t", html: "h" }, token: key });
    await call("POST", `/v1/inboxes/${inbox}/messages/${sent.id}/forward`, 201, { body: { to: [second.email], text: "FYI" }, token: key });

    await call("GET", `/v1/inboxes/${inbox}/threads`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/threads/${sent.threadId}`, 200, { token: key });
    await call("GET", `/v1/inboxes/${inbox}/threads/thr_nope`, 404, { token: key });
    await call("GET", "/v1/inboxes/inb_nope/threads", 404, { token: key });
  });

  test("a message received over SMTP, with its authentication results", async () => {
    const raw = [
      "From: Ada <ada@sender.example>",
      `To: ${second.email}`,
      "Subject: Over SMTP",
      "Message-ID: <openapi-test@sender.example>",
      "Date: Wed, 01 Jan 2025 00:00:00 +0000",
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "",
      "Hello over SMTP.",
      "",
    ].join("\r\n");
    await sendMail(server.smtpPort, { from: "ada@sender.example", to: [second.email], raw });
    const listed = await eventually(
      "the SMTP message",
      async () => (await call("GET", `/v1/inboxes/${second.id}/messages?query=${encodeURIComponent("Over SMTP")}`, 200, { token: key })).body,
      (messages: any[]) => messages.length > 0,
    );
    const message = (await call("GET", `/v1/inboxes/${second.id}/messages/${listed[0].id}`, 200, { token: key })).body;
    expect(message.authentication).toBeObject();
  });

  test("webhooks and their attempts", async () => {
    receiver.respond("/failing", { status: 500, body: "not today" });
    const hook = (await call("POST", "/v1/webhooks", 201, { body: { url: receiver.url("/hook"), events: ["message.received"] }, token: key })).body;
    const failing = (await call("POST", "/v1/webhooks", 201, { body: { url: receiver.url("/failing"), events: ["message.received"] }, token: key })).body;
    await call("POST", "/v1/webhooks", 422, { body: { url: "ftp://example.com", events: ["message.received"] }, token: key });
    await call("GET", "/v1/webhooks", 200, { token: key });
    await call("GET", `/v1/webhooks/${hook.id}`, 200, { token: key });
    await call("GET", "/v1/webhooks/whk_nope", 404, { token: key });
    await call("PATCH", `/v1/webhooks/${hook.id}`, 200, { body: { events: ["message.received", "message.sent"] }, token: key });
    await call("POST", `/v1/webhooks/${hook.id}/test`, 200, { token: key });
    await call("POST", `/v1/webhooks/${failing.id}/test`, 200, { token: key });
    const attempts = await eventually(
      "the test events' attempts",
      async () => [
        ...(await call("GET", `/v1/webhooks/${hook.id}/attempts`, 200, { token: key })).body,
        ...(await call("GET", `/v1/webhooks/${failing.id}/attempts`, 200, { token: key })).body,
      ],
      (all: any[]) => all.filter((attempt) => attempt.finishedAt).length >= 2,
    );
    await call("POST", `/v1/webhooks/${hook.id}/attempts/${attempts[0].id}/retry`, 200, { token: key });
    await call("POST", `/v1/webhooks/${hook.id}/attempts/att_nope/retry`, 404, { token: key });
    await call("DELETE", `/v1/webhooks/${failing.id}`, 200, { token: key });
  });

  test("the event stream", async () => {
    // Only its start is read: a stream does not end.
    const abort = new AbortController();
    const stream = await fetch(`${server.api.baseUrl}/v1/events`, { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
    expect(stream.status).toBe(200);
    conforms("GET", "/v1/events", stream.status, stream.headers, "");
    abort.abort();
    await call("GET", "/v1/events?events=message.opened", 422, { token: key });
    await call("GET", "/v1/events?inboxId=inb_nope", 404, { token: key });
  });

  test("domains", async () => {
    const domain = (await call("POST", "/v1/domains", 201, { body: { name: "openapi.example" }, token: key })).body;
    await call("POST", "/v1/domains", 409, { body: { name: "openapi.example" }, token: key });
    await call("POST", "/v1/domains", 422, { body: { name: "not a domain" }, token: key });
    await call("GET", "/v1/domains", 200, { token: key });
    await call("GET", `/v1/domains/${domain.id}`, 200, { token: key });
    await call("GET", "/v1/domains/openapi.example", 200, { token: key });
    await call("GET", "/v1/domains/nowhere.example", 404, { token: key });
    await call("GET", `/v1/domains/${domain.id}/dns`, 200, { token: key });
    await call("POST", `/v1/domains/${domain.id}/verify`, 200, { token: key });
    await call("POST", `/v1/domains/${domain.id}/rotate-dkim`, 200, { token: key });
    const now = server.app.clock.now();
    const failureDetails = [{ resultType: "certificate-expired", sessions: 2, receivingMx: "mx.openapi.example" }, { resultType: "starttls-not-supported", sessions: 1, receivingMx: null }];
    await server.app.store.tlsReports.insert([{ id: newId("tlsrpt"), reportId: "r1", organizationName: "Company-X", policyDomain: "openapi.example", policyType: "sts", startAt: now - 86_400_000, endAt: now, successfulSessions: 10, failedSessions: 3, failureDetails, receivedAt: now, contentDigest: null }]);
    await call("GET", `/v1/domains/${domain.id}/tls-reports`, 200, { token: key });
    await call("GET", `/v1/domains/${domain.id}/tls-reports?per=0`, 422, { token: key });
    await call("DELETE", `/v1/domains/${domain.id}?force=maybe`, 422, { token: key });
    await call("DELETE", `/v1/domains/${domain.id}`, 200, { token: key });
  });

  test("suppressions", async () => {
    const now = server.app.clock.now();
    await server.app.store.suppressions.upsert({
      id: newId("sup"),
      organizationId: org,
      address: "gone@example.net",
      reason: "bounced",
      detail: "550 5.1.1 no such user",
      messageId: null,
      createdAt: now,
      updatedAt: now,
    });
    await call("GET", "/v1/suppressions", 200, { token: key });
    await call("GET", "/v1/suppressions/gone@example.net", 200, { token: key });
    await call("DELETE", "/v1/suppressions/gone@example.net", 200, { token: key });
    await call("GET", "/v1/suppressions/gone@example.net", 404, { token: key });
  });

  test("access rules", async () => {
    const rule = (await call("POST", "/v1/access-rules", 201, { body: { direction: "receive", action: "block", value: "spam.example" }, token: key })).body;
    await call("POST", "/v1/access-rules", 409, { body: { direction: "receive", action: "block", value: "SPAM.example" }, token: key });
    await call("POST", "/v1/access-rules", 422, { body: { direction: "receive", action: "block", value: "not a domain" }, token: key });
    await call("GET", "/v1/access-rules?direction=receive", 200, { token: key });
    await call("GET", `/v1/access-rules/${rule.id}`, 200, { token: key });
    await call("DELETE", `/v1/access-rules/${rule.id}`, 200, { token: key });
    await call("GET", `/v1/access-rules/${rule.id}`, 404, { token: key });
  });

  test("drafts", async () => {
    const base = `/v1/inboxes/${account.inbox.id}/drafts`;
    const attachment = { content: Buffer.from("draft notes\n").toString("base64"), name: "notes.txt" };
    const draft = (await call("POST", base, 201, { body: { to: [second.email], subject: "Drafted", text: "t", labels: ["d"], attachments: [attachment] }, token: key })).body;
    await call("POST", base, 201, { token: key });
    await call("POST", base, 422, { body: { sendAt: "soon" }, token: key });
    await call("POST", "/v1/inboxes/inb_nope/drafts", 404, { body: {}, token: key });
    await call("GET", base, 200, { token: key });
    await call("GET", `${base}/${draft.id}`, 200, { token: key });
    await call("GET", `${base}/drf_nope`, 404, { token: key });
    await call("PATCH", `${base}/${draft.id}`, 200, { body: { html: "<p>h</p>", sendAt: new Date(Date.now() + 3_600_000).toISOString() }, token: key });
    await call("PATCH", `${base}/${draft.id}`, 422, { body: { to: ["nope"] }, token: key });
    await call("POST", `${base}/${draft.id}/send`, 201, { token: key, headers: { "idempotency-key": "openapi-draft-send" } });
    await call("POST", `${base}/${draft.id}/send`, 201, { token: key, headers: { "idempotency-key": "openapi-draft-send" } });
    await call("POST", `${base}/${draft.id}/send`, 409, { token: key });
    await call("PATCH", `${base}/${draft.id}`, 409, { body: { subject: "late" }, token: key });
    await call("DELETE", `${base}/${draft.id}`, 200, { token: key });
    await call("DELETE", `${base}/${draft.id}`, 404, { token: key });
  });

  test("responses are the services' objects byte for byte", async () => {
    const inbox = account.inbox.id;
    const same = async (path: string, expected: unknown) => expect((await call("GET", path, 200, { token: key })).text).toBe(JSON.stringify(expected));
    await same(`/v1/inboxes/${inbox}/messages/${sent.id}`, await getMessage(server.app, org, inbox, sent.id));
    await same(`/v1/inboxes/${second.id}/messages/${received.id}`, await getMessage(server.app, org, second.id, received.id));
    await same(`/v1/inboxes/${inbox}/threads/${sent.threadId}`, await (await getThread(server.app, org, inbox, sent.threadId)).whole());
    await same(`/v1/inboxes/${second.id}`, await getInbox(server.app, org, second.id));
    const hooks = (await call("GET", "/v1/webhooks", 200, { token: key })).body;
    await same(`/v1/webhooks/${hooks[0].id}`, await getWebhook(server.app, org, hooks[0].id));
    const domain = (await call("POST", "/v1/domains", 201, { body: { name: "bytes.example" }, token: key })).body;
    await same(`/v1/domains/${domain.id}`, await getDomain(server.app, org, domain.id));
    // Fields left out stay out: an inbox without a name has no `name` key.
    const unnamed = (await call("POST", "/v1/inboxes", 201, { token: key })).text;
    expect(unnamed).not.toContain('"name"');
    expect(JSON.parse(unnamed)._id).toBe(JSON.parse(unnamed).id);
  });

  test("every operation's success was validated", () => {
    const missing = operations()
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`)
      .filter((key) => ![...(seen.get(key) ?? [])].some((status) => status < 300));
    expect(missing).toEqual([]);
    const failures = [...seen.values()].reduce((sum, statuses) => sum + [...statuses].filter((status) => status >= 400).length, 0);
    console.log(`validated: ${seen.size} operations, ${failures} of their failure statuses`);
  });
});

// --- A generated client -----------------------------------------------------------------------

const clientProgram = `import createClient from "openapi-fetch";
import type { components, paths } from "./api";

declare const process: { argv: string[] };
const [baseUrl, apiKey, inboxId, to] = process.argv.slice(2) as [string, string, string, string];
const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${apiKey}\` } });

const sent = await client.POST("/v1/inboxes/{inboxId}/messages/send", {
  params: { path: { inboxId } },
  body: { to: [to], subject: "From a generated client", text: "Typed all the way", html: "<p>Typed all the way</p>" },
});
if (!sent.data) throw new Error(\`send: \${sent.response.status} \${sent.error?.error}\`);
const message: components["schemas"]["Message"] = sent.data;

const listed = await client.GET("/v1/inboxes/{inboxId}/messages", { params: { path: { inboxId }, query: { per: "10" } } });
if (!listed.data) throw new Error(\`list: \${listed.error?.error}\`);
const summaries: components["schemas"]["MessageSummary"][] = listed.data;

const thread = await client.GET("/v1/inboxes/{inboxId}/threads/{threadId}", { params: { path: { inboxId, threadId: message.threadId } } });
if (!thread.data) throw new Error(\`thread: \${thread.error?.error}\`);

const missing = await client.GET("/v1/inboxes/{inboxId}/messages/{messageId}", { params: { path: { inboxId, messageId: "msg_nope" } } });
const notFound: string | undefined = missing.error?.error;

console.log(JSON.stringify({
  sent: { id: message.id, subject: message.subject, status: message.status },
  listed: summaries.map((summary) => summary.id),
  thread: { id: thread.data.id, messages: thread.data.messages.map((item) => item.id), count: thread.data.messageCount },
  notFound: { status: missing.response.status, error: notFound },
}));
`;

/** Misuse the types must refuse: each line below fails to compile, or tsc fails on the unused directive. */
const misuseProgram = `import createClient from "openapi-fetch";
import type { paths } from "./api";

const client = createClient<paths>({ baseUrl: "http://127.0.0.1" });
// @ts-expect-error: \`to\` is required
void client.POST("/v1/inboxes/{inboxId}/messages/send", { params: { path: { inboxId: "inb" } }, body: { subject: "s", text: "t", html: "h" } });
// @ts-expect-error: the path parameter is required
void client.GET("/v1/inboxes/{inboxId}/messages/{messageId}", { params: { path: { inboxId: "inb" } } });
// @ts-expect-error: no such path
void client.GET("/v1/nowhere");
export async function fields() {
  const { data } = await client.GET("/v1/inboxes/{inboxId}", { params: { path: { inboxId: "inb" } } });
  // @ts-expect-error: an inbox has no such field
  return data?.subject;
}
`;

describe("a client generated from the served document", () => {
  test("type-checks, sends a message, lists it and reads its thread", async () => {
    const folder = join(work, "client");
    mkdirSync(folder);
    writeFileSync(join(folder, "openapi.json"), JSON.stringify(document));
    const generate = Bun.spawnSync([process.execPath, join(import.meta.dir, "openapi-typescript.ts"), join(folder, "openapi.json"), join(folder, "api.ts")], { stderr: "pipe" });
    expect(generate.exitCode, generate.stderr.toString()).toBe(0);

    writeFileSync(join(folder, "client.ts"), clientProgram);
    writeFileSync(join(folder, "misuse.ts"), misuseProgram);
    writeFileSync(
      join(folder, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "ESNext", moduleResolution: "bundler", lib: ["ES2023", "DOM"], types: [], strict: true, noEmit: true, skipLibCheck: true },
        files: ["api.ts", "client.ts", "misuse.ts"],
      }),
    );
    const check = Bun.spawnSync([join(repoRoot, "node_modules/.bin/tsc"), "-p", folder], { stdout: "pipe", stderr: "pipe" });
    expect(check.exitCode, `${check.stdout}${check.stderr}`).toBe(0);

    const account = await register(server.api);
    const colleague = (await server.api.post("/v1/inboxes", { name: "Colleague" }, account.apiKey.key)).body;
    // Spawned without blocking: the server answering it runs in this process.
    const run = Bun.spawn([process.execPath, join(folder, "client.ts"), server.api.baseUrl, account.apiKey.key, account.inbox.id, colleague.email], { stdout: "pipe", stderr: "pipe" });
    const [out, err, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
    expect(exitCode, err).toBe(0);
    const result = JSON.parse(out);
    expect(result.sent).toMatchObject({ subject: "From a generated client", status: "sent" });
    expect(result.listed).toContain(result.sent.id);
    expect(result.thread).toEqual({ id: expect.any(String), messages: [result.sent.id], count: 1 });
    expect(result.notFound).toEqual({ status: 404, error: "Message not found" });
  }, 60_000);
});
