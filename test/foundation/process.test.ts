import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { getTableConfig } from "drizzle-orm/sqlite-core";
import { is } from "drizzle-orm";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "../../src/store/sqlite/schema/index";
import { migrate } from "../../src/store/sqlite/migrate";
import { openDatabase } from "../../src/store/sqlite/open";
import { eventually, onPostgres, repoRoot, startChildServer, tempDir, testEnv } from "../harness";

const dirs: string[] = [];
const freshDir = () => {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const runCli = (args: string[], env: Record<string, string>) =>
  Bun.spawnSync([process.execPath, join(repoRoot, "src/main.ts"), ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });

describe("configuration", () => {
  test.each([
    ["INBOXD_HTTP_PORT", "abc"],
    ["INBOXD_SMTP_PORT", "70000"],
    ["INBOXD_SEND_LIMIT", "-5"],
    ["INBOXD_WEBHOOK_RETRY_DELAYS", "60,soon"],
    ["INBOXD_SMTP_RELAY", "http://relay"],
    ["INBOXD_LOG_FORMAT", "xml"],
  ])("%s=%s stops the start with exit 2 and one line naming it", (name, value) => {
    const result = runCli(["serve"], { ...testEnv(freshDir()), [name]: value });
    expect(result.exitCode).toBe(2);
    const stderr = result.stderr.toString().trim();
    expect(stderr.split("\n")).toHaveLength(1);
    expect(stderr).toContain(name);
  });

  test("flags override the environment, and an invalid flag is refused the same way", () => {
    const result = runCli(["serve", "--http-port", "nope"], { ...testEnv(freshDir()), INBOXD_HTTP_PORT: "0" });
    expect(result.exitCode).toBe(2);
    expect(result.stderr.toString()).toContain("INBOXD_HTTP_PORT: 'nope'");
    expect(runCli(["serve", "--no-such-flag", "1"], testEnv(freshDir())).exitCode).toBe(2);
  });

  test("--help lists the commands and every setting with its default", () => {
    const out = runCli(["--help"], {}).stdout.toString();
    for (const word of ["serve", "migrate", "version", "INBOXD_HTTP_PORT", "8006", "INBOXD_WEBHOOK_ALLOW_PRIVATE", "INBOXD_DELIVERY_RETRY_DELAYS"]) expect(out).toContain(word);
  });

  test("version prints the package version", () => {
    expect(runCli(["version"], {}).stdout.toString()).toMatch(/^inboxd \d+\.\d+\.\d+/);
  });
});

describe("store", () => {
  test("migrate applies every migration once; a second run applies nothing", () => {
    const dir = freshDir();
    const first = runCli(["migrate"], { ...testEnv(dir), INBOXD_LOG_LEVEL: "info" });
    expect(first.exitCode).toBe(0);
    expect(first.stderr.toString()).toContain("migrations applied");
    const second = runCli(["migrate"], { ...testEnv(dir), INBOXD_LOG_LEVEL: "info" });
    expect(second.exitCode).toBe(0);
    expect(second.stderr.toString()).not.toContain("migrations applied");
  });

  test("the drizzle schema names exactly the columns the migrations create", () => {
    const db = new Database(":memory:");
    migrate(db, 0);
    for (const table of Object.values(schema).filter((v) => is(v, SQLiteTable))) {
      const config = getTableConfig(table as SQLiteTable);
      const actual = db.query<{ name: string }, []>(`PRAGMA table_info(${config.name})`).all().map((c) => c.name).sort();
      expect({ table: config.name, columns: config.columns.map((c) => c.name).sort() }).toEqual({ table: config.name, columns: actual });
    }
  });

  test("database pragmas: WAL, synchronous FULL, foreign keys on, busy timeout", () => {
    const opened = openDatabase(freshDir());
    const pragma = (name: string) => Object.values(opened.sqlite.query<Record<string, unknown>, []>(`PRAGMA ${name}`).get()!)[0];
    try {
      expect(pragma("journal_mode")).toBe("wal");
      expect(pragma("synchronous")).toBe(2);
      expect(pragma("foreign_keys")).toBe(1);
      expect(pragma("busy_timeout")).toBe(5000);
    } finally {
      opened.close();
    }
  });
});

describe("process lifecycle", () => {
  test("a second process on the same data dir is refused with a clear message", async () => {
    const dir = freshDir();
    const first = await startChildServer(testEnv(dir));
    try {
      const second = runCli(["serve"], testEnv(dir));
      expect(second.exitCode).toBe(2);
      expect(second.stderr.toString()).toContain("already running on data dir");
      expect((await first.api.get("/health")).status).toBe(200);
    } finally {
      expect(await first.kill("SIGTERM")).toBe(0);
    }
  });

  test("after kill -9 the lock is gone and a restart works", async () => {
    const dir = freshDir();
    const first = await startChildServer(testEnv(dir));
    await first.kill("SIGKILL");
    const again = await startChildServer(testEnv(dir));
    expect((await again.api.get("/health")).status).toBe(200);
    expect(await again.kill("SIGTERM")).toBe(0);
  });

  test("SIGTERM finishes cleanly with exit 0 and logs the stop", async () => {
    const child = await startChildServer(testEnv(freshDir()));
    expect(await child.kill("SIGINT")).toBe(0);
    expect(child.output()).toContain('"event":"stopped"');
  });

  test("SIGHUP (a reload, logrotate's signal) is logged and ignored: the server keeps serving, and SIGTERM still stops it cleanly", async () => {
    const child = await startChildServer(testEnv(freshDir()));
    try {
      child.proc.kill("SIGHUP");
      await eventually("the SIGHUP logged", () => child.output(), (output) => output.includes("SIGHUP ignored"));
      expect((await child.api.get("/health")).status).toBe(200);
    } finally {
      expect(await child.kill("SIGTERM")).toBe(0);
    }
    expect(child.output()).toContain('"event":"stopped"');
  });

  test("prints one listening line per listener with its real port", async () => {
    const child = await startChildServer(testEnv(freshDir()));
    try {
      expect(child.httpPort).toBeGreaterThan(0);
      expect(child.output()).toContain(`"address":"127.0.0.1:${child.httpPort}"`);
    } finally {
      await child.kill();
    }
  });
});

describe("single executable", () => {
  const binary = join(repoRoot, "dist/inboxd");
  test.skipIf(!existsSync(binary))("dist/inboxd starts from an empty folder with no node_modules and answers /health", async () => {
    const cwd = freshDir();
    const child = await startChildServer({ ...testEnv(join(cwd, "data")) }, { command: [binary], cwd });
    try {
      const health = await child.api.get("/health");
      expect(health.body).toEqual({ healthy: true, environment: "test" });
      // Its data dir made where it was told: the database in it, or on PostgreSQL the node's lock.
      expect(existsSync(join(cwd, "data", onPostgres ? "inboxd.lock" : "inboxd.db"))).toBe(true);
    } finally {
      expect(await child.kill()).toBe(0);
    }
  });
});
