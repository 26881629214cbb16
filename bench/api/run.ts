// bench/api: the authenticated message list and send routes of the real HTTP app under wrk
// (50 connections, loopback), beside bare Elysia routes on the same database doing the same
// indexed SELECT (for the list) and one committed INSERT per request (for send), measured in
// the same run. Needs wrk (apt-get install wrk).
// Fair to both sides: one process serves both apps (only the one measured is loaded), wrk runs
// with the same settings against each, and each is warmed up first (JIT) for a fifth of the time.
// Beside req/s, the CPU time the process spends per request (all threads, process.cpuUsage),
// which other load on a shared machine inflates far less than the rate. wrk keeps every connection
// busy, so the mean latency is connections / rate (Little's law): 5 ms at 50 connections needs
// 10,000 req/s, from the reference as much as from inboxd.
// The same routes then run on PostgreSQL (a local cluster of the run's own, fsync on), and the two
// engines are printed side by side; the PostgreSQL side skips, saying why, without its programs.
// CPU per request counts on PostgreSQL the database server's processes too (from /proc).
// Run: bun bench/api/run.ts [seconds per measurement, default 10]
import { Database } from "bun:sqlite";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { Elysia } from "elysia";
import { openApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { createHttpApp } from "../../src/http/app";
import { insertInbox } from "../../src/inboxes/service";
import { seedOrganization, tempDir, testEnv } from "../../test/harness";
import { postgresMissing, startPostgresCluster } from "../../test/peers/postgres";
import { postmasterPid, processTreeCpuSeconds } from "../lib";
import { corpus, seedMessages } from "../search/seed";

if (!Bun.which("wrk")) {
  console.error("bench/api needs wrk on the PATH (Debian: apt-get install wrk)");
  process.exit(2);
}

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;

interface WrkResult {
  requestsPerSecond: number;
  p50: string;
  p99: string;
  errors: string;
  /** CPU time of this process (both servers, only the measured one busy) per request. */
  cpuMicros: number;
}

/** `databaseCpuMicros`: CPU time a database server outside this process has spent so far, counted with the process's. */
type Target = { url: string; apiKey?: string; script?: string; databaseCpuMicros?: () => number };


function wrkArgs(target: Target, duration: number): string[] {
  const args = ["wrk", "-t2", `-c${connections}`, `-d${duration}s`, "--latency"];
  if (target.apiKey) args.push("-H", `Authorization: Bearer ${target.apiKey}`);
  if (target.script) args.push("-s", target.script);
  return [...args, target.url];
}

async function runWrk(target: Target, duration: number): Promise<string> {
  const proc = Bun.spawn(wrkArgs(target, duration), { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`wrk failed: ${await new Response(proc.stderr).text()}`);
  return out;
}

/** Warms the server up, then runs wrk and reads its summary (requests/s, latency percentiles, non-2xx count). */
async function wrk(target: Target): Promise<WrkResult> {
  await runWrk(target, Math.max(1, Math.round(seconds / 5)));
  const cpuBefore = process.cpuUsage();
  const databaseBefore = target.databaseCpuMicros?.() ?? 0;
  const out = await runWrk(target, seconds);
  const cpu = process.cpuUsage(cpuBefore);
  cpu.user += (target.databaseCpuMicros?.() ?? 0) - databaseBefore;
  const percentile = (p: string) => new RegExp(`^\\s+${p}%\\s+(\\S+)`, "m").exec(out)?.[1] ?? "?";
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]),
    p50: percentile("50"),
    p99: percentile("99"),
    errors: /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0",
    cpuMicros: (cpu.user + cpu.system) / Number(/(\d+) requests in/.exec(out)![1]),
  };
}

const row = (label: string, r: WrkResult) =>
  console.log(
    `  ${label.padEnd(62)} ${Math.round(r.requestsPerSecond).toString().padStart(7)} req/s   p50 ${r.p50.padStart(8)}   p99 ${r.p99.padStart(8)}   ${Math.round(r.cpuMicros).toString().padStart(5)} µs CPU/req   non-2xx ${r.errors}`,
  );

/** The app on one engine, seeded alike: an inbox of 10,000 messages, and one to send to. */
async function openSeeded(env: Record<string, string>) {
  const dataDir = tempDir("inboxd-bench-api");
  const app = await openApp(loadConfig(testEnv(dataDir, { INBOXD_SEND_LIMIT: "1000000000", ...env })));
  const { organizationId, apiKey } = await seedOrganization(app);
  const inbox = (await app.store.inboxes.findByEmail((await app.store.transaction((tx) => insertInbox(app, tx, organizationId, { email: "bench@inboxd.test" }))).email))!;
  const recipient = await app.store.transaction((tx) => insertInbox(app, tx, organizationId, { email: "recipient@inboxd.test" }));
  await seedMessages(app, inbox, 10_000, corpus(500));
  // The planner's statistics of a database in service (autovacuum gathers them, but not within
  // the seconds between the seeding and the measurement).
  if (env.INBOXD_DATABASE_URL) {
    const postgres = new SQL(env.INBOXD_DATABASE_URL, { max: 1 });
    await postgres`ANALYZE`;
    await postgres.close();
  }
  // As under `inboxd serve`: the engine's own background work (SQLite: WAL checkpoints on their own thread).
  const maintenance = await app.store.startMaintenance(app.log);
  const server = createHttpApp(app).listen({ port: 0, hostname: "127.0.0.1" });
  const sendBody = JSON.stringify({ to: [recipient.email], subject: "Load test", text: "Hello from the benchmark.", html: "<p>Hello from the benchmark.</p>" });
  const script = join(dataDir, "post.lua");
  writeFileSync(script, `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = ${JSON.stringify(sendBody)}\n`);
  return {
    dataDir,
    apiKey,
    inbox,
    script,
    base: `http://127.0.0.1:${server.server!.port}`,
    async close() {
      await server.stop(true);
      await maintenance.stop();
      app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type Engine = Awaited<ReturnType<typeof openSeeded>>;
const measureList = (engine: Engine, databaseCpuMicros?: () => number) => wrk({ url: `${engine.base}/v1/inboxes/${engine.inbox.id}/messages`, apiKey: engine.apiKey, databaseCpuMicros });
const measureSend = (engine: Engine, databaseCpuMicros?: () => number) =>
  wrk({ url: `${engine.base}/v1/inboxes/${engine.inbox.id}/messages/send`, apiKey: engine.apiKey, script: engine.script, databaseCpuMicros });

console.log(`wrk, ${connections} connections, ${seconds} s each, loopback; inbox of 10,000 messages (500 B text)`);
const results: Record<string, { list: WrkResult; send: WrkResult }> = {};

const sqliteEngine = await openSeeded({ INBOXD_DATABASE_URL: "" });
try {
  // The references: the same database through its own connection, no auth, no presentation.
  const sqlite = new Database(join(sqliteEngine.dataDir, "inboxd.db"), { strict: true });
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("CREATE TABLE bench_inserts (id INTEGER PRIMARY KEY, body TEXT NOT NULL, created_at INTEGER NOT NULL)");
  const newest = sqlite.query("SELECT id, organization_id, inbox_id, thread_id, from_address, to_addresses, subject, text, html, status, created_at FROM messages WHERE inbox_id = ? ORDER BY created_at DESC LIMIT 20");
  const insert = sqlite.query("INSERT INTO bench_inserts (body, created_at) VALUES (?, ?)");
  const bare = new Elysia()
    // The inbox comes from the path, as in the real route.
    .get("/v1/inboxes/:inboxId/messages", ({ params }) => newest.all(params.inboxId))
    .post("/insert", ({ body }) => sqlite.transaction(() => insert.run(JSON.stringify(body), Date.now()))())
    .listen({ port: 0, hostname: "127.0.0.1" });
  const bareBase = `http://127.0.0.1:${bare.server!.port}`;

  const list = await measureList(sqliteEngine);
  const bareList = await wrk({ url: `${bareBase}/v1/inboxes/${sqliteEngine.inbox.id}/messages` });
  row("GET /v1/inboxes/{id}/messages (API key, 20 newest)", list);
  row("  reference: bare Elysia route, same indexed SELECT", bareList);
  console.log(`  list / reference: ${((100 * list.requestsPerSecond) / bareList.requestsPerSecond).toFixed(0)}% of the rate, ${((100 * bareList.cpuMicros) / list.cpuMicros).toFixed(0)}% by CPU per request`);

  const send = await measureSend(sqliteEngine);
  const bareInsert = await wrk({ url: `${bareBase}/insert`, script: sqliteEngine.script });
  row("POST .../messages/send (local recipient, composed, 2 messages)", send);
  row("  reference: bare Elysia route, one committed INSERT", bareInsert);
  results.SQLite = { list, send };

  await bare.stop(true);
  sqlite.close();
} finally {
  await sqliteEngine.close();
}

// The same app on PostgreSQL: a local cluster of this run's own, as durable as SQLite's FULL (fsync on).
if (postgresMissing) console.log(`  PostgreSQL: skipped (${postgresMissing})`);
else {
  const cluster = await startPostgresCluster({ durable: true });
  try {
    const postgresEngine = await openSeeded({ INBOXD_DATABASE_URL: await cluster.createDatabase("bench_api") });
    try {
      const postmaster = postmasterPid(cluster.dir);
      const serverCpu = () => processTreeCpuSeconds(postmaster) * 1e6;
      results.PostgreSQL = { list: await measureList(postgresEngine, serverCpu), send: await measureSend(postgresEngine, serverCpu) };
    } finally {
      await postgresEngine.close();
    }
  } finally {
    cluster.stop();
  }
  console.log("  side by side (same run, same machine)");
  console.log(`  ${"".padEnd(62)} ${"SQLite".padStart(30)}   ${"PostgreSQL (local, fsync on)".padStart(30)}`);
  const cell = (r: WrkResult) => `${Math.round(r.requestsPerSecond)} req/s, p99 ${r.p99}, ${Math.round(r.cpuMicros)} µs CPU`.padStart(30);
  console.log(`  ${"GET /v1/inboxes/{id}/messages".padEnd(62)} ${cell(results.SQLite!.list)}   ${cell(results.PostgreSQL!.list)}`);
  console.log(`  ${"POST .../messages/send".padEnd(62)} ${cell(results.SQLite!.send)}   ${cell(results.PostgreSQL!.send)}`);
}
