// `inboxd db copy`: a stopped installation copied into an empty database, then started there; every
// message (a large one kept in blob chunks too), key and webhook is there and the API answers alike.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { canonical, copyProgress } from "../../src/store/copy";
import { register, repoRoot, startTestServer, tempDir, type TestServer } from "../harness";
import { postgresTestsSkipped, startPostgresCluster } from "../peers/postgres";
import { freePort } from "../peers/ports";
import { sendMail } from "../smtp/mail-client";
import { createInbox, validSend } from "../messages/helpers";

const sourceCommand = [process.execPath, join(repoRoot, "src/main.ts")];
/** The embedded engine, also when the suite runs on PostgreSQL (INBOXD_TEST_DATABASE_URL). */
const onSqlite = { INBOXD_DATABASE_URL: "" };

async function runCopy(env: Record<string, string>, target: string) {
  const child = Bun.spawn([...sourceCommand, "db", "copy", "--to", target], { env: { ...process.env, INBOXD_LOG_LEVEL: "silent", ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, exitCode };
}

/** What a client sees of an organization: inboxes, messages with their raw sources, webhooks, domains with their DNS records. */
async function snapshot(server: TestServer, apiKey: string) {
  const seen: Record<string, unknown> = {};
  const get = async (path: string) => {
    const res = await server.api.get(path, apiKey);
    expect(res.status).toBe(200);
    seen[path] = res.body;
    return res.body;
  };
  const inboxes = (await get("/v1/inboxes")) as { id: string }[];
  for (const inbox of inboxes) {
    const messages = (await get(`/v1/inboxes/${inbox.id}/messages`)) as { id: string }[];
    for (const message of messages) {
      await get(`/v1/inboxes/${inbox.id}/messages/${message.id}`);
      const raw = await fetch(`${server.api.baseUrl}/v1/inboxes/${inbox.id}/messages/${message.id}/raw`, { headers: { authorization: `Bearer ${apiKey}` } });
      seen[`raw ${message.id}`] = Bun.hash(new Uint8Array(await raw.arrayBuffer())).toString();
    }
    await get(`/v1/inboxes/${inbox.id}/threads`);
  }
  await get("/v1/webhooks");
  const domains = (await get("/v1/domains")) as { id: string }[];
  for (const domain of domains) await get(`/v1/domains/${domain.id}/dns`);
  return seen;
}

describe("inboxd db copy", () => {
  const dirs: string[] = [];
  let source: TestServer;
  let apiKey: string;
  let before: Record<string, unknown>;

  beforeAll(async () => {
    source = await startTestServer({ env: onSqlite });
    dirs.push(source.dataDir);
    const account = await register(source.api);
    apiKey = account.apiKey.key;
    const second = await createInbox(source, apiKey, { name: "Second" });
    // A local send (two stored copies) with an attachment over the blob threshold (256 KiB).
    const large = Buffer.alloc(300 * 1024, "x").toString("base64");
    const sent = await source.api.post(`/v1/inboxes/${account.inbox.id}/messages/send`, validSend({ to: [second.email], attachments: [{ filename: "big.txt", content: large, contentType: "text/plain" }] }), apiKey);
    expect(sent.status).toBe(201);
    // Labels: message_labels is also written by a trigger on messages, on both engines.
    expect((await source.api.patch(`/v1/inboxes/${account.inbox.id}/messages/${sent.body.id}`, { labels: ["copied", "big"] }, apiKey)).status).toBe(200);
    await sendMail(source.smtpPort, { from: "someone@example.net", to: [account.inbox.email], raw: "From: someone@example.net\r\nTo: " + account.inbox.email + "\r\nSubject: inbound één\r\n\r\nHello over SMTP\r\n" });
    expect((await source.api.post("/v1/webhooks", { url: "https://hooks.example.net/inboxd", events: ["message.received"] }, apiKey)).status).toBe(201);
    expect((await source.api.post("/v1/domains", { name: "copy.example.org" }, apiKey)).status).toBe(201);
    before = await snapshot(source, apiKey);
    await source.stop();
  }, 60_000);

  afterAll(async () => {
    await source.cleanup();
    for (const dir of dirs) Bun.spawnSync(["rm", "-rf", dir]);
  });

  test("to a new data dir: counts and checksums agree, and the copy serves the same answers", async () => {
    const target = join(tempDir(), "copy");
    dirs.push(target);
    const copied = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `sqlite:${target}`);
    expect(copied.stderr).toContain("copy: verifying row counts and checksums");
    expect(copied.exitCode).toBe(0);
    expect(copied.stdout).toMatch(/^copied \d+ rows in \d+ tables from SQLite .* row counts and checksums agree; the copied secrets are sealed with the key now also in /);
    // Plain lines, no bar, when stderr is not a terminal.
    expect(copied.stderr).toMatch(/^copy: messages: 3 rows$/m);
    expect(copied.stderr).not.toContain("\r");
    expect(readFileSync(join(target, "secret.key"), "utf8")).toBe(readFileSync(join(source.dataDir, "secret.key"), "utf8"));

    const copy = await startTestServer({ dataDir: target, env: onSqlite });
    try {
      expect(await snapshot(copy, apiKey)).toEqual(before);
      // The search index was rebuilt from the copied messages.
      const inboxes = (await copy.api.get("/v1/inboxes", apiKey)).body as { id: string }[];
      const found = await Promise.all(inboxes.map(async (inbox) => (await copy.api.get(`/v1/inboxes/${inbox.id}/messages?query=${encodeURIComponent("één")}`, apiKey)).body.length as number));
      expect(found.reduce((a, b) => a + b, 0)).toBe(1);
    } finally {
      await copy.stop();
    }
  }, 60_000);

  test("refuses a target that already holds rows, and a running source", async () => {
    const target = join(tempDir(), "copy");
    dirs.push(target);
    expect((await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `sqlite:${target}`)).exitCode).toBe(0);
    const again = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `sqlite:${target}`);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toMatch(/is not empty \(.*messages.* hold rows\): a copy goes only into an empty database/);

    const running = await startTestServer({ dataDir: target, env: onSqlite });
    try {
      const other = join(tempDir(), "copy");
      dirs.push(other);
      const refused = await runCopy({ INBOXD_DATA_DIR: target }, `sqlite:${other}`);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toContain("another inboxd is already running on data dir");
    } finally {
      await running.stop();
    }
  }, 60_000);

  test.skipIf(Boolean(postgresTestsSkipped))("to PostgreSQL, started there, and back to a data dir: the same answers each time", async () => {
    // A cluster of its own, also in the suite's PostgreSQL run: the copy starts servers of both engines.
    const postgres = await startPostgresCluster();
    try {
      const url = await postgres.createDatabase("inboxd_copy");
      const toPostgres = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, url);
      expect({ exitCode: toPostgres.exitCode, stderr: toPostgres.exitCode ? toPostgres.stderr : "" }).toEqual({ exitCode: 0, stderr: "" });
      expect(toPostgres.stdout).toContain("row counts and checksums agree; the copied secrets are sealed with the key in");
      const secretKey = readFileSync(join(source.dataDir, "secret.key"), "utf8").trim();

      const node = await startTestServer({ env: { INBOXD_DATABASE_URL: url, INBOXD_SECRET_KEY: secretKey } });
      try {
        expect(await snapshot(node, apiKey)).toEqual(before);
      } finally {
        await node.cleanup();
      }

      const back = join(tempDir(), "back");
      dirs.push(back);
      const toSqlite = await runCopy({ INBOXD_DATABASE_URL: url, INBOXD_SECRET_KEY: secretKey, INBOXD_DATA_DIR: tempDir() }, `sqlite:${back}`);
      expect({ exitCode: toSqlite.exitCode, stderr: toSqlite.exitCode ? toSqlite.stderr : "" }).toEqual({ exitCode: 0, stderr: "" });
      // The leases' holders stay behind: they mean nothing to another engine.
      expect(toSqlite.stdout).toMatch(/^not copied, as the source engine's own bookkeeping: .*deliveries\.claimed_by/m);
      const copy = await startTestServer({ dataDir: back, env: { ...onSqlite, INBOXD_SECRET_KEY: secretKey } });
      try {
        expect(await snapshot(copy, apiKey)).toEqual(before);
      } finally {
        await copy.stop();
      }
    } finally {
      postgres.stop();
    }
  }, 120_000);

  test("names what it needs", async () => {
    const missing = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, "mysql://nowhere");
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("expected postgres://… or sqlite:DATA_DIR");
    // A mistyped scheme is said back without its password.
    const mistyped = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, "postgress://inboxd:DbPassword7@db.example.net/inboxd");
    expect({ exitCode: mistyped.exitCode, stderr: mistyped.stderr.trim() }).toEqual({ exitCode: 2, stderr: "inboxd: db copy: --to postgress://inboxd:***@db.example.net/inboxd: expected postgres://… or sqlite:DATA_DIR" });
    // A target that cannot be reached is named, with its server and without its password.
    const port = await freePort();
    const unreachable = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `postgres://inboxd:DbPassword7@127.0.0.1:${port}/inboxd`);
    expect(unreachable.exitCode).toBe(1);
    expect(unreachable.stderr).toStartWith(`inboxd: db copy --to: cannot reach PostgreSQL at 127.0.0.1:${port} (`);
    expect(unreachable.stderr).not.toContain("DbPassword7");
    // The installation's own data dir as the target.
    const itself = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `sqlite:${source.dataDir}`);
    expect({ exitCode: itself.exitCode, stderr: itself.stderr.trim() }).toEqual({ exitCode: 2, stderr: `inboxd: db copy: --to sqlite:${resolve(source.dataDir)} is this installation's own data dir: name a new one` });
    // ... and through a symbolic link to it (the lock held by this command was said to be another inboxd's).
    const scratch = tempDir();
    dirs.push(scratch);
    const link = join(scratch, "link");
    symlinkSync(source.dataDir, link);
    const throughLink = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `sqlite:${link}`);
    expect({ exitCode: throughLink.exitCode, stderr: throughLink.stderr.trim() }).toEqual({ exitCode: 2, stderr: `inboxd: db copy: --to sqlite:${link} is this installation's own data dir: name a new one` });
    // A target that is a file is the flag's fault, not INBOXD_DATA_DIR's.
    const file = join(scratch, "a-file");
    writeFileSync(file, "");
    const notADir = await runCopy({ INBOXD_DATA_DIR: source.dataDir }, `sqlite:${file}`);
    expect({ exitCode: notADir.exitCode, stderr: notADir.stderr.trim() }).toEqual({ exitCode: 2, stderr: `inboxd: db copy --to: cannot use ${file}: it is not a directory` });
  }, 30_000);
});

describe("copy progress", () => {
  const recorder = (isTTY: boolean) => {
    const written: string[] = [];
    return { stream: { isTTY, write: (text: string) => written.push(text) }, written };
  };

  test("a bar with rows per second on a terminal", () => {
    const { stream, written } = recorder(true);
    const progress = copyProgress(stream);
    progress.batch("messages", 500, 1000, 2500.4);
    progress.tableDone("messages", 1000);
    expect(written[0]).toBe(`\r[${"#".repeat(15)}${" ".repeat(15)}] messages 500/1000 2500 rows/s\x1b[K`);
    expect(written.at(-1)).toBe("copy: messages: 1000 rows\n");
  });

  test("plain lines otherwise: every 10 % of a large table, and each table's total", () => {
    const { stream, written } = recorder(false);
    const progress = copyProgress(stream);
    for (let copied = 500; copied <= 20_000; copied += 500) progress.batch("events", copied, 20_000, 1000);
    progress.tableDone("events", 20_000);
    progress.batch("inboxes", 3, 3, 1000);
    progress.tableDone("inboxes", 3);
    expect(written).toEqual([...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((tenth) => `copy: events: ${Math.max(500, tenth * 2000)} of 20000 rows (1000 rows/s)\n`), "copy: events: 20000 rows\n", "copy: inboxes: 3 rows\n"]);
  });

  test("the checksum's canonical form ignores key order and keeps bytes exact", () => {
    expect(canonical({ b: [1, { y: null, x: "é" }], a: new Uint8Array([0, 255]) })).toBe(canonical({ a: Buffer.from([0, 255]), b: [1, { x: "é", y: null }] }));
    expect(canonical({ a: new Uint8Array([1]) })).not.toBe(canonical({ a: "AQ==" }));
  });
});
