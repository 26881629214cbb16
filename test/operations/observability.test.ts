// What an operator sees: one log line per event kind (HTTP request, SMTP session, message
// received, delivery attempt, failed webhook try, failed login and lockout), the start-up banner,
// and Prometheus metrics read by an independent parser. The real process, over real sockets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { existsSync, rmSync } from "node:fs";
import { type ChildServer, eventually, inboxdCommand, onPostgres, register, type Registered, startChildServer, startTestServer, tempDir, testEnv, testPassword } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startSmtpSink, type SmtpSink } from "../peers/smtp-sink";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";
import { openSession } from "../smtp/raw-client";
import { rawRequest, withoutUsableHost } from "../http/raw-request";
import { StoreUnavailableError } from "../../src/store/unavailable";

const METRICS_TOKEN = "metrics-secret-for-tests";

let dns: DnsServer;
let sink: SmtpSink;
let receiver: WebhookReceiver;
let child: ChildServer;
let account: Registered;
let dataDir: string;

type LogLine = Record<string, unknown> & { event: string; level: string };
const logLines = (): LogLine[] =>
  child
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
const linesOf = (event: string) => logLines().filter((line) => line.event === event);

beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink({
    respond: (rcpt) => (rcpt.startsWith("later@") ? { code: 451, message: "4.2.0 try again later" } : /^(gone|o'brien)@/.test(rcpt) ? { code: 550, message: `5.1.1 <${rcpt}>: Recipient address rejected: no such user` } : undefined),
  });
  dns.set("remote.test", "MX", [{ exchange: "mx.remote.test", priority: 10 }]);
  dns.set("mx.remote.test", "A", ["127.0.0.1"]);
  receiver = startWebhookReceiver();
  receiver.respond("/failing", { status: 500 });
  dataDir = tempDir();
  child = await startChildServer(
    testEnv(dataDir, {
      INBOXD_DNS_SERVERS: dns.address,
      INBOXD_OUTBOUND_PORT: String(sink.port),
      INBOXD_DELIVERY_RETRY_DELAYS: "60,600",
      INBOXD_WEBHOOK_RETRY_DELAYS: "60",
      INBOXD_LOGIN_MAX_FAILURES: "2",
      INBOXD_METRICS_TOKEN: METRICS_TOKEN,
      INBOXD_METRICS_BIND: "127.0.0.1:0",
      INBOXD_TRUSTED_PROXIES: "127.0.0.1",
    }),
    { command: inboxdCommand() },
  );
  account = await register(child.api);
}, 30_000);
afterAll(async () => {
  await child.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
  await dns.close();
  await sink.close();
  await receiver.close();
});

describe("log lines", () => {
  test("the start-up banner names the version, mail domain, host, data dir, engine and every listener", () => {
    const [ready] = linesOf("ready");
    expect(ready).toMatchObject({ mailDomain: "inboxd.test", hostname: "mx.inboxd.test", dataDir, database: onPostgres ? "postgresql" : "sqlite" });
    expect(ready.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(String(ready.listeners)).toMatch(/^http=127\.0\.0\.1:\d+ metrics=127\.0\.0\.1:\d+ smtp=127\.0\.0\.1:\d+$/);
  });

  test("one line per HTTP request: method, route pattern, status, duration, request id, organization; never a credential", async () => {
    const res = await child.api.get(`/v1/inboxes/${account.inbox.id}/messages`, account.apiKey.key);
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id")!;
    expect(requestId).toMatch(/^req_/);
    const line = await eventually("the request's line", () => linesOf("http request").find((l) => l.requestId === requestId), Boolean);
    expect(line).toMatchObject({ level: "info", method: "GET", route: "/v1/inboxes/:inboxId/messages", status: 200, organizationId: account.inbox.organizationId });
    expect(typeof line!.ms).toBe("number");
    const unknown = await child.api.get("/v1/inboxes/inb_missing", account.apiKey.key);
    expect(unknown.status).toBe(404);
    const notFound = await eventually("the 404's line", () => linesOf("http request").find((l) => l.requestId === unknown.headers.get("x-request-id")), Boolean);
    expect(notFound).toMatchObject({ route: "/v1/inboxes/:inboxId", status: 404 });
    const output = child.output();
    for (const secret of [account.apiKey.key, account.token, testPassword]) expect(output).not.toContain(secret);
  });

  test("a route's own Response is logged and counted with the status sent: /mcp's 405, an idempotent replay's 201; an MCP tool's call of the API is no request of its own", async () => {
    const lineOf = (res: { headers: Headers }) => eventually("the request's line", () => linesOf("http request").find((l) => l.requestId === res.headers.get("x-request-id")), Boolean);
    const refused = await child.api.get("/mcp", account.apiKey.key);
    expect(refused.status).toBe(405);
    expect(await lineOf(refused)).toMatchObject({ route: "/mcp", status: 405 });
    const create = () => child.api.request("POST", "/v1/inboxes", { token: account.apiKey.key, body: {}, headers: { "idempotency-key": "logged-replay" } });
    expect((await create()).status).toBe(201);
    const replay = await create();
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await lineOf(replay)).toMatchObject({ route: "/v1/inboxes", status: 201 });
    const apiCalls = () => linesOf("http request").filter((l) => l.route === "/v1/inboxes" && l.method === "GET").length;
    const before = apiCalls();
    const client = new Client({ name: "inboxd-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${child.api.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${account.apiKey.key}` } } }));
    try {
      const listed = (await client.callTool({ name: "list_inboxes", arguments: {} })) as { isError?: boolean };
      expect(listed.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    await eventually("the tool call's /mcp line", () => linesOf("http request").filter((l) => l.route === "/mcp" && l.status === 200), (lines) => lines.length > 0);
    expect(apiCalls()).toBe(before);
  });

  test("X-Request-Id from a trusted proxy is kept and echoed; a malformed one is replaced", async () => {
    const forwarded = await child.api.request("GET", "/health", { headers: { "x-request-id": "trace-4bf92f3577b34da6" } });
    expect(forwarded.headers.get("x-request-id")).toBe("trace-4bf92f3577b34da6");
    const malformed = await child.api.request("GET", "/health", { headers: { "x-request-id": "two words" } });
    expect(malformed.headers.get("x-request-id")).toMatch(/^req_/);
  });

  test("failed logins and the lockout each log a line, with the client address and no password", async () => {
    const attempt = () => child.api.post("/auth/login", { username: account.user.email, password: "wrong password here" });
    expect((await attempt()).status).toBe(401);
    expect((await attempt()).status).toBe(401);
    expect((await attempt()).status).toBe(429);
    // The lockout is logged when the second attempt is counted, before its password is checked and
    // its own failure logged: both lines are waited for, not the lockout alone.
    await eventually("the lockout line and both failures", () => [linesOf("login lockout").length, linesOf("login failed").length], ([lockouts, failures]) => lockouts > 0 && failures >= 2);
    expect(linesOf("login failed").length).toBe(2);
    expect(linesOf("login failed")[0]).toMatchObject({ level: "warn", clientIp: "127.0.0.1" });
    expect(child.output()).not.toContain("wrong password here");
  });

  test("an SMTP session: one line with peer, EHLO name, TLS, accepted and refused with codes; one per message received", async () => {
    const session = await openSession(child.smtpPort!);
    expect((await session.command("EHLO client.example")).code).toBe(250);
    expect((await session.command("MAIL FROM:<sender@example.org>")).code).toBe(250);
    expect((await session.command("RCPT TO:<nobody-here@inboxd.test>")).code).toBe(550);
    expect((await session.command(`RCPT TO:<${account.inbox.email}>`)).code).toBe(250);
    expect((await session.command("DATA")).code).toBe(354);
    const accepted = await session.command("Subject: logged\r\nFrom: sender@example.org\r\n\r\nHello.\r\n.");
    expect(accepted.code).toBe(250);
    await session.command("QUIT");
    const sessionLine = await eventually("the session line", () => linesOf("smtp session").at(-1), Boolean);
    expect(sessionLine).toMatchObject({ peer: "127.0.0.1", ehlo: "client.example", tls: "none", accepted: 1, refused: 1, codes: "550" });
    // Logged once analysed and stored, after the 250 (the inbound queue).
    const received = (await eventually("the message received line", () => linesOf("message received").at(-1), Boolean))!;
    expect(received).toMatchObject({ inboxId: account.inbox.id, spf: expect.any(String), dkim: expect.any(String), dmarc: expect.any(String) });
    expect(received.messageId).toMatch(/^msg_/);
    expect(received.size).toBeGreaterThan(40);
  });

  test("a message refused at MAIL or RCPT for a parameter or an address encoding counts among the session's refusals", async () => {
    const session = await openSession(child.smtpPort!);
    expect((await session.command("EHLO refusals.example")).code).toBe(250);
    expect((await session.command("MAIL FROM:<sender@example.org> FOO=BAR")).code).toBe(555);
    expect((await session.command("MAIL FROM:<sender@example.org>")).code).toBe(250);
    expect((await session.command(`RCPT TO:<${account.inbox.email}> NOTIFY=NEVER`)).code).toBe(555);
    await session.command("QUIT");
    const sessionLine = await eventually("the session line", () => linesOf("smtp session").find((l) => l.ehlo === "refusals.example"), Boolean);
    expect(sessionLine).toMatchObject({ accepted: 0, refused: 2, codes: "555x2" });
  });

  test("a session's codes are counted per code: a session refused message after message holds a line of its own size, not 4 bytes more per refusal", async () => {
    const session = await openSession(child.smtpPort!);
    expect((await session.command("EHLO many.example")).code).toBe(250);
    for (let i = 0; i < 30; i++) {
      expect((await session.command("MAIL FROM:<sender@example.org>")).code).toBe(250);
      expect((await session.command(`RCPT TO:<${account.inbox.email}>`)).code).toBe(250);
      expect((await session.command("DATA")).code).toBe(354);
      expect((await session.command("Subject: nul\r\n\r\nA \0 in it.\r\n.")).code).toBe(554);
    }
    expect((await session.command("MAIL FROM:<sender@example.org>")).code).toBe(250);
    expect((await session.command("RCPT TO:<nobody-here@inboxd.test>")).code).toBe(550);
    await session.command("QUIT");
    const sessionLine = await eventually("the session line", () => linesOf("smtp session").find((line) => line.ehlo === "many.example"), Boolean);
    expect(sessionLine).toMatchObject({ accepted: 0, refused: 31, codes: "554x30,550" });
  });

  test("a delivery attempt per recipient: domain, MX host, reply, outcome, next try and give-up time", async () => {
    const sent = await child.api.request("POST", `/v1/inboxes/${account.inbox.id}/messages/send`, {
      token: account.apiKey.key,
      body: { to: ["ok@remote.test", "later@remote.test", "gone@remote.test", "o'brien@remote.test"], subject: "Hi", text: "Hi.", html: "<p>Hi.</p>" },
    });
    expect(sent.status).toBe(201);
    const attempts = await eventually("four attempt lines", () => linesOf("delivery attempt").filter((l) => l.messageId === sent.body.id), (lines) => lines.length === 4);
    const byOutcome = Object.fromEntries(attempts.map((line) => [line.outcome, line]));
    // Every address the remote server names, apostrophes included.
    expect(attempts.filter((line) => line.outcome === "bounced").map((line) => line.reply)).toEqual(Array(2).fill("550 5.1.1 <***@remote.test>: Recipient address rejected: no such user"));
    expect(byOutcome.delivered).toMatchObject({ level: "info", domain: "remote.test", mx: "mx.remote.test [127.0.0.1]", attempt: 1 });
    // The remote server named the address in its reply: the line keeps its domain only.
    expect(byOutcome.bounced).toMatchObject({ level: "warn", reply: "550 5.1.1 <***@remote.test>: Recipient address rejected: no such user" });
    expect(byOutcome.deferred).toMatchObject({ level: "warn", reply: expect.stringContaining("451") });
    const { nextAttemptAt, giveUpAfter } = byOutcome.deferred as { nextAttemptAt: string; giveUpAfter: string };
    expect(Date.parse(giveUpAfter)).toBeGreaterThan(Date.parse(nextAttemptAt));
    for (const address of ["ok@remote.test", "later@remote.test", "gone@remote.test", "brien@remote.test"]) expect(child.output()).not.toContain(address);
  });

  test("a webhook try that fails logs the host, status and next try; never the URL's path", async () => {
    const created = await child.api.post("/v1/webhooks", { url: receiver.url("/failing?token=hook-secret"), events: ["message.received"] }, account.apiKey.key);
    expect(created.status).toBe(201);
    const session = await openSession(child.smtpPort!);
    await session.command("EHLO client.example");
    await session.command("MAIL FROM:<sender@example.org>");
    await session.command(`RCPT TO:<${account.inbox.email}>`);
    await session.command("DATA");
    expect((await session.command("Subject: hook\r\n\r\nHello again.\r\n.")).code).toBe(250);
    await session.command("QUIT");
    const failed = await eventually("the failed try's line", () => linesOf("webhook attempt failed").at(-1), Boolean);
    expect(failed).toMatchObject({ level: "warn", eventType: "message.received", host: `127.0.0.1:${receiver.port}`, statusCode: 500, attempt: 1 });
    expect(Date.parse(String(failed!.nextAttemptAt))).toBeGreaterThan(Date.now());
    expect(child.output()).not.toContain("hook-secret");
  }, 30_000);
});

describe("metrics", () => {
  test("GET /metrics on the API port needs the token; the metrics listener needs none", async () => {
    expect((await child.api.get("/metrics")).status).toBe(401);
    expect((await child.api.get("/metrics", "wrong-token")).status).toBe(401);
    const scraped = await child.api.get("/metrics", METRICS_TOKEN);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get("content-type")).toContain("text/plain");
    const port = Number(String(linesOf("listening").find((l) => l.part === "metrics")!.address).split(":").pop());
    const direct = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(direct.status).toBe(200);
    expect(await direct.text()).toContain("inboxd_http_requests_total");
  });

  test("the metrics listener serves GET and HEAD only: another method is 405 {error} with Allow", async () => {
    const port = Number(String(linesOf("listening").find((l) => l.part === "metrics")!.address).split(":").pop());
    for (const method of ["POST", "PUT", "DELETE", "OPTIONS"]) {
      const answer = await fetch(`http://127.0.0.1:${port}/metrics`, { method });
      expect({ method, status: answer.status, allow: answer.headers.get("allow"), body: await answer.json() }).toEqual({ method, status: 405, allow: "GET, HEAD", body: { error: "Method not allowed: GET /metrics" } });
    }
    expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: "HEAD" })).status).toBe(200);
  });

  test("the metrics listener and the API port answer a request without a usable Host 400 {error}, never Bun's error page", async () => {
    const metricsPort = Number(String(linesOf("listening").find((l) => l.part === "metrics")!.address).split(":").pop());
    for (const request of withoutUsableHost) {
      for (const port of [metricsPort, child.httpPort]) {
        const answer = await rawRequest(port, request.replace("/health", "/metrics"));
        expect({ request, port, status: answer.status, body: answer.body }).toEqual({ request, port, status: 400, body: JSON.stringify({ error: "The Host header is missing or malformed" }) });
      }
    }
  });

  test("the scrape parses with the Prometheus project's own Python parser and counts what happened", async () => {
    const text = (await child.api.get("/metrics", METRICS_TOKEN)).body as string;
    const parser = Bun.spawnSync([debianPython, "-c", PARSE_WITH_PROMETHEUS_CLIENT], { stdin: Buffer.from(text), stdout: "pipe", stderr: "pipe" });
    if (parser.exitCode === 3) {
      console.warn("skipped the independent parse: python3-prometheus-client is not installed (apt-get install python3-prometheus-client)");
    } else {
      expect(parser.stderr.toString()).toBe("");
      expect(parser.exitCode).toBe(0);
    }
    const samples = parser.exitCode === 0 ? (JSON.parse(parser.stdout.toString()) as Sample[]) : naiveSamples(text);
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + (s.value ?? 0), 0);
    expect(value("inboxd_http_requests_total", { route: "/v1/inboxes/:inboxId/messages", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(value("inboxd_http_request_duration_seconds_count", { route: "/v1/inboxes/:inboxId/messages" })).toBeGreaterThanOrEqual(1);
    expect(value("inboxd_smtp_connections_total")).toBeGreaterThanOrEqual(2);
    expect(value("inboxd_smtp_messages_total", { outcome: "accepted" })).toBeGreaterThanOrEqual(2);
    expect(value("inboxd_smtp_messages_total", { outcome: "550" })).toBeGreaterThanOrEqual(1);
    expect(value("inboxd_delivery_attempts_total", { outcome: "delivered" })).toBeGreaterThanOrEqual(1);
    expect(value("inboxd_delivery_attempts_total", { outcome: "deferred" })).toBeGreaterThanOrEqual(1);
    expect(value("inboxd_webhook_attempts_total", { outcome: "retry" })).toBeGreaterThanOrEqual(1);
    // The deferred recipient waits for its retry; the failed webhook delivery too.
    expect(value("inboxd_outbound_queue_depth")).toBe(1);
    expect(value("inboxd_outbound_queue_oldest_age_seconds")).toBeGreaterThan(0);
    expect(value("inboxd_webhook_queue_depth")).toBeGreaterThanOrEqual(1);
    expect(value("inboxd_commit_duration_seconds_count")).toBeGreaterThanOrEqual(2);
    expect(samples.some((s) => s.name === "inboxd_search_index_backlog")).toBe(true);
    expect(value("inboxd_database_up")).toBe(1);
    expect(value("inboxd_process_resident_memory_bytes")).toBeGreaterThan(10_000_000);
    expect(samples.some((s) => s.name === "inboxd_nodejs_eventloop_lag_seconds")).toBe(true);
    expect(value("inboxd_nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    // Made up by a walk of the whole heap under Bun at every scrape (src/metrics/metrics.ts).
    expect(samples.filter((s) => s.name.startsWith("inboxd_nodejs_heap_space_size_"))).toEqual([]);
    // Not reported by Bun (0 with every socket open, no collection ever observed): left out.
    expect(samples.filter((s) => /^inboxd_nodejs_(active_|gc_)/.test(s.name))).toEqual([]);
    expect(value("inboxd_smtp_messages_total", { outcome: "555" })).toBeGreaterThanOrEqual(2);
  });

  test("while the database does not answer, the scrape still answers: the process's own metrics, inboxd_database_up 0 and the store's readings NaN", async () => {
    const server = await startTestServer({ env: { INBOXD_METRICS_TOKEN: METRICS_TOKEN } });
    try {
      const deliveries = server.app.store.deliveries;
      const backlog = deliveries.backlog;
      deliveries.backlog = () => Promise.reject(new StoreUnavailableError(new Error("Connection closed")));
      const scraped = await server.api.get("/metrics", METRICS_TOKEN);
      deliveries.backlog = backlog;
      expect(scraped.status).toBe(200);
      const text = scraped.body as string;
      expect(text).toContain("\ninboxd_database_up 0\n");
      expect(text).toMatch(/\ninboxd_outbound_queue_depth NaN\n/i);
      expect(text).toContain("\ninboxd_webhook_queue_depth 0\n");
      expect(text).toContain("inboxd_http_requests_total");
      expect((await server.api.get("/metrics", METRICS_TOKEN)).body).toContain("\ninboxd_database_up 1\n");
    } finally {
      await server.cleanup();
    }
  });

  test("without INBOXD_METRICS_TOKEN there is no /metrics on the API port", async () => {
    const server = await startTestServer();
    try {
      expect((await server.api.get("/metrics")).status).toBe(404);
      expect((await server.api.get("/metrics", METRICS_TOKEN)).status).toBe(404);
    } finally {
      await server.cleanup();
    }
  });
});

// Debian's python3-prometheus-client lives beside Debian's python3, which a pyenv on PATH may hide.
const debianPython = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

/** A sample as the Python parser gives it: null for NaN. */
type Sample = { name: string; labels: Record<string, string>; value: number | null };

// Exit 3: the parser is not installed (the test says so and falls back to reading the lines itself).
const PARSE_WITH_PROMETHEUS_CLIENT = `
import json, sys
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(3)
# NaN (the event-loop lag's mean when no delay was sampled since the last scrape) has no JSON form.
samples = [{"name": s.name, "labels": s.labels, "value": s.value if s.value == s.value else None} for family in text_string_to_metric_families(sys.stdin.read()) for s in family.samples]
print(json.dumps(samples))
`;

function naiveSamples(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)!;
      const labels = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1], labels, value: Number(match[3]) };
    });
}
