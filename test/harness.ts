/**
 * The test harness: the real inboxd on free loopback ports with a fresh temp data dir, either
 * in-process (fast; tests can move its clock) or as a child process (the built binary or the
 * source), plus typed HTTP helpers. Peers (DNS, SMTP sink, webhook receiver) live in test/peers.
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { afterAll } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openApp, type App } from "../src/app";
import { createApiKey } from "../src/auth/api-keys";
import type { CreatedApiKeyRecord, Organization, User } from "../src/auth/present";
import { Clock } from "../src/clock";
import { loadConfig } from "../src/config";
import { newId, randomToken, sha256Hex } from "../src/ids";
import type { Inbox } from "../src/inboxes/present";
import { createLogger } from "../src/log";
import { startServices, type Running } from "../src/serve";
import { atEnd } from "./at-end";

export const repoRoot = join(import.meta.dir, "..");

/** Made under the system's temp dir and removed when the run ends, whatever a test left in it. */
export function tempDir(label = "inboxd"): string {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`));
  atEnd(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * INBOXD_TEST_DATABASE_URL (a PostgreSQL database the tests may create databases from) runs every
 * test instance on PostgreSQL: each data dir gets a database of its own, made when its environment
 * is (so that a restart on the same data dir finds its data), dropped when its test server is
 * cleaned up or, at the latest, when the run ends (test/at-end.ts).
 */
const testDatabaseUrl = process.env.INBOXD_TEST_DATABASE_URL || undefined;
export const onPostgres = testDatabaseUrl !== undefined;

/** The name of a test of the embedded engine's own files or SQL, which `.skipIf(onPostgres)` skips: on PostgreSQL it says why. */
export const sqliteOnly = (title: string, reason: string) => (onPostgres ? `${title} — skipped on PostgreSQL: ${reason}` : title);
const testDatabases = new Set<string>();

const psql = (...commands: string[]) => Bun.spawnSync(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", testDatabaseUrl!, ...commands.flatMap((command) => ["-c", command])], { stderr: "pipe" });

/** The URL of the data dir's own database, made if this process has not made it yet. */
function testDatabaseFor(dataDir: string): string {
  const name = `inboxd_t_${sha256Hex(dataDir).slice(0, 20)}`;
  if (!testDatabases.has(name)) {
    const made = psql(`CREATE DATABASE ${name}`);
    if (made.exitCode !== 0 && !made.stderr.toString().includes("already exists")) throw new Error(`INBOXD_TEST_DATABASE_URL: could not create ${name}: ${made.stderr}`);
    testDatabases.add(name);
  }
  const url = new URL(testDatabaseUrl!);
  url.pathname = `/${name}`;
  return url.toString();
}

function dropTestDatabases(names: string[]): void {
  if (names.length === 0) return;
  psql(...names.map((name) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  for (const name of names) testDatabases.delete(name);
}
if (onPostgres) atEnd(() => dropTestDatabases([...testDatabases]));

/** Environment for a test instance: loopback, free ports, quiet logs, private webhook and MX targets allowed. */
export function testEnv(dataDir: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    INBOXD_DATA_DIR: dataDir,
    ...(onPostgres ? { INBOXD_DATABASE_URL: testDatabaseFor(dataDir) } : {}),
    INBOXD_HTTP_PORT: "0",
    INBOXD_SMTP_PORT: "0",
    INBOXD_BIND: "127.0.0.1",
    INBOXD_MAIL_DOMAIN: "inboxd.test",
    INBOXD_HOSTNAME: "mx.inboxd.test",
    INBOXD_ENV: "test",
    INBOXD_WEBHOOK_ALLOW_PRIVATE: "1",
    // The remote MX hosts of tests are SMTP sinks on loopback; the policy has a test of its own.
    INBOXD_OUTBOUND_ALLOW_PRIVATE: "1",
    INBOXD_SMTP_GREETING_DELAY_MS: "0",
    // Every test registers from 127.0.0.1; the limit has a test of its own.
    INBOXD_REGISTER_LIMIT: "100000",
    // Tests move the clock by days and then look at events; the purge has a test of its own.
    INBOXD_EVENT_RETENTION_DAYS: "36500",
    INBOXD_LOG_LEVEL: process.env.INBOXD_TEST_LOG_LEVEL ?? "silent",
    ...overrides,
  };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface ApiClient {
  baseUrl: string;
  request<T = any>(method: string, path: string, options?: { body?: unknown; token?: string; headers?: Record<string, string>; rawBody?: RequestInit["body"] }): Promise<ApiResponse<T>>;
  get<T = any>(path: string, token?: string): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, token?: string): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, token?: string): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, token?: string): Promise<ApiResponse<T>>;
}

/** `beforeRequest`: awaited before each request is sent. */
export function apiClient(baseUrl: string, beforeRequest?: () => Promise<void>): ApiClient {
  const request: ApiClient["request"] = async (method, path, options = {}) => {
    await beforeRequest?.();
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body = options.rawBody;
    if (options.body !== undefined) {
      headers["content-type"] ??= "application/json";
      body = JSON.stringify(options.body);
    }
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    return { status: response.status, headers: response.headers, body: parsed as any };
  };
  return {
    baseUrl,
    request,
    get: (path, token) => request("GET", path, { token }),
    post: (path, body, token) => request("POST", path, { body, token }),
    patch: (path, body, token) => request("PATCH", path, { body, token }),
    delete: (path, token) => request("DELETE", path, { token }),
  };
}

export interface TestServer {
  app: App;
  clock: Clock;
  running: Running;
  dataDir: string;
  api: ApiClient;
  httpPort: number;
  /** The inbound SMTP listener's port. */
  smtpPort: number;
  /** Stops the server; the data dir stays until `cleanup`, so a restart can reuse it. */
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

/** The real server in this process, on free ports, with a clock the test can move. */
export async function startTestServer(options: { env?: Record<string, string>; dataDir?: string } = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDir();
  const env = testEnv(dataDir, options.env);
  const config = loadConfig(env);
  const clock = new Clock();
  const app = await openApp(config, { clock, log: createLogger(config.logFormat, config.logLevel) });
  const running = await startServices(app);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await running.stop();
    closeDatabaseOf(app);
    app.close();
  };
  return {
    app,
    clock,
    running,
    dataDir,
    // Mail accepted over SMTP is analysed and stored after its 250 (src/smtp/inbound-queue.ts): the
    // client lets that finish before each request, so that a test reads what it delivered. The
    // delay itself is measured in test/smtp/receive.test.ts.
    api: apiClient(`http://127.0.0.1:${running.httpPort}`, () => app.queues.runDueNow("inbound")),
    httpPort: running.httpPort,
    smtpPort: running.parts.find((part) => part.name === "smtp")!.address!.port,
    stop,
    async cleanup() {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (config.databaseUrl) dropTestDatabases([new URL(config.databaseUrl).pathname.slice(1)]);
    },
  };
}

/** An organization with an API key, made straight in the store (register over HTTP is tested on its own). */
export async function seedOrganization(app: App, name = "Test org"): Promise<{ organizationId: string; apiKey: string }> {
  const organizationId = newId("org");
  const now = app.clock.now();
  await app.store.accounts.createOrganization({ id: organizationId, name }, now);
  return { organizationId, apiKey: (await createApiKey(app.store, organizationId, "test", now)).key };
}

const databases = new Map<string, Database>();
const postgresConnections = new Map<string, SQL>();

/** A PostgreSQL value as bun:sqlite gives the same column: bigint as a number, a boolean as 0 or 1. */
const asSqliteGives = (value: unknown) => (typeof value === "bigint" ? Number(value) : typeof value === "boolean" ? Number(value) : value);

/**
 * Rows of a statement on the app's database, either engine, through a connection of the test's own
 * (as databaseOf): for the rows its interface does not show. Portable SQL with `?` or `?N` parameters;
 * values come back as SQLite gives them.
 */
export async function queryRows<T = Record<string, unknown>>(app: App, statement: string, ...params: unknown[]): Promise<T[]> {
  const url = app.config.databaseUrl;
  if (!url) return databaseOf(app).query(statement).all(...(params as never[])) as T[];
  let connection = postgresConnections.get(url);
  if (!connection) postgresConnections.set(url, (connection = new SQL(url, { max: 1, bigint: true })));
  let n = 0;
  const rows = (await connection.unsafe(statement.replace(/\?(\d*)/g, (_, index: string) => `$${index || ++n}`), params)) as Record<string, unknown>[];
  return rows.map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, asSqliteGives(value)])) as T);
}

/** The first row of queryRows, or undefined. */
export const queryRow = async <T = Record<string, unknown>>(app: App, statement: string, ...params: unknown[]): Promise<T | undefined> => (await queryRows<T>(app, statement, ...params))[0];

/**
 * A connection of the test's own to the app's database (the store keeps its connection to itself),
 * for the rows and tables its interface does not show. It sees what the app has committed. The test
 * server's stop closes it; an app opened otherwise closes it with closeDatabaseOf.
 */
export function databaseOf(app: App): Database {
  if (app.config.databaseUrl) throw new Error("databaseOf: this test reads the SQLite file directly, and this app runs on PostgreSQL (queryRows works on both)");
  const path = join(app.config.dataDir, "inboxd.db");
  let sqlite = databases.get(path);
  if (!sqlite) {
    sqlite = new Database(path, { create: false, strict: true });
    sqlite.exec("PRAGMA busy_timeout = 5000");
    databases.set(path, sqlite);
  }
  return sqlite;
}

export function closeDatabaseOf(app: App): void {
  const path = join(app.config.dataDir, "inboxd.db");
  databases.get(path)?.close();
  databases.delete(path);
  if (app.config.databaseUrl) void postgresConnections.get(app.config.databaseUrl)?.close();
  if (app.config.databaseUrl) postgresConnections.delete(app.config.databaseUrl);
}

/** The password `register` uses unless overridden, for tests that log in afterwards. */
export const testPassword = "correct horse battery staple";

export interface Registered {
  user: User;
  token: string;
  organization: Organization;
  apiKey: CreatedApiKeyRecord;
  inbox: Inbox;
}

/** A new account over `POST /auth/register` (a fresh email unless overridden); throws unless 201. */
export async function register(api: ApiClient, overrides: Record<string, unknown> = {}): Promise<Registered> {
  const body = { firstName: "Test", lastName: "User", username: `user-${randomToken(6)}@example.com`, password: testPassword, ...overrides };
  const res = await api.post<Registered>("/auth/register", body);
  if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export interface ChildServer {
  proc: ReturnType<typeof Bun.spawn>;
  httpPort: number;
  smtpPort?: number;
  api: ApiClient;
  output(): string;
  /** Sends the signal and waits for the exit code. */
  kill(signal?: NodeJS.Signals): Promise<number>;
}

/**
 * inboxd as a child process: `command` is the built binary (`[join(repoRoot, "dist/inboxd")]`) or
 * the source (`["bun", "src/main.ts"]`, the default). Resolves once it logs `ready`, after every listener line.
 */
export async function startChildServer(env: Record<string, string>, options: { command?: string[]; args?: string[]; timeoutMs?: number; cwd?: string } = {}): Promise<ChildServer> {
  const command = options.command ?? [process.execPath, join(repoRoot, "src/main.ts")];
  const proc = Bun.spawn([...command, "serve", ...(options.args ?? [])], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ...env, INBOXD_LOG_LEVEL: "info", INBOXD_LOG_FORMAT: "json" },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const ports: Record<string, number> = {};
  let ready = false;
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      output += text;
      const lines = (partial + text).split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        if (line.includes('"event":"ready"')) ready = true;
        if (line.includes('"event":"listening"')) {
          const entry = JSON.parse(line);
          ports[entry.part] = Number(String(entry.address).split(":").pop());
        }
      }
    }
  };
  const collected = Promise.all([collect(proc.stdout as ReadableStream<Uint8Array>), collect(proc.stderr as ReadableStream<Uint8Array>)]);
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  while (!ready) {
    if (proc.exitCode !== null) throw new Error(`inboxd exited with ${proc.exitCode} before listening:\n${output}`);
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`inboxd did not start in time:\n${output}`);
    }
    await Bun.sleep(20);
  }
  return {
    proc,
    httpPort: ports.http!,
    get smtpPort() {
      return ports.smtp;
    },
    api: apiClient(`http://127.0.0.1:${ports.http}`),
    output: () => output,
    async kill(signal = "SIGTERM") {
      proc.kill(signal);
      const code = await proc.exited;
      // Its last lines may still be in the pipe when the exit is seen.
      await collected;
      return code;
    },
  };
}

/** Reads until `done` holds, every `pollMs`, for at most `timeoutMs`; throws naming what it waited for. */
export async function eventually<T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000, pollMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}; last: ${JSON.stringify(value)}`);
    await Bun.sleep(pollMs);
  }
}

/** Temp dirs and child servers of one test file: the children killed and the dirs removed after its tests. */
export function scratch() {
  const dirs: string[] = [];
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const child of children) if (child.proc.exitCode === null) await child.kill("SIGKILL");
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir() {
      const dir = tempDir();
      dirs.push(dir);
      return dir;
    },
    keep(child: ChildServer): ChildServer {
      children.push(child);
      return child;
    },
  };
}

/**
 * The command line of inboxd for CLI tests: the executable `npm test` builds first (what operators
 * run, and it starts in a fraction of the time), else the source.
 */
export const inboxdCommand = (): string[] => (existsSync(join(repoRoot, "dist/inboxd")) ? [join(repoRoot, "dist/inboxd")] : [process.execPath, join(repoRoot, "src/main.ts")]);

/** Runs an inboxd command to its end; stdin closed. */
export async function runInboxd(args: string[], env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const child = Bun.spawn([...inboxdCommand(), ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, exitCode };
}

/**
 * The runtime's own settings (allocator, JavaScript engine) that the packaged systemd unit sets,
 * read from packaging/inboxd.service: memory is measured on inboxd as it is installed.
 */
export function packagedRuntimeEnv(): Record<string, string> {
  const unit = readFileSync(join(repoRoot, "packaging/inboxd.service"), "utf8");
  const settings = [...unit.matchAll(/^Environment=((?:MIMALLOC|BUN_JSC)_\w+)=(.*)$/gm)];
  return Object.fromEntries(settings.map(([, name, value]) => [name!, value!]));
}
