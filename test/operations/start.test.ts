// Strict settings and start failures: each is one line on stderr naming the setting, exit code 2,
// and nothing written to the data dir; help and version for every command.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { totalmem } from "node:os";
import { defaultDbCacheMb, memoryForThisProcess } from "../../src/config";
import { selfSignedCert } from "../../src/smtp/self-signed";
import { eventually, inboxdCommand, onPostgres, runInboxd, scratch, startChildServer, testEnv } from "../harness";

const { dir: freshDir, keep } = scratch();

/** Exactly one line on stderr, containing `naming`, with exit code 2, and an untouched data dir. */
async function expectOneLineFailure(args: string[], env: Record<string, string>, naming: string, dataDir?: string) {
  const { stderr, exitCode } = await runInboxd(args, env);
  expect(stderr.trim().split("\n")).toEqual([expect.stringContaining(naming)]);
  expect(stderr).not.toContain("    at ");
  expect(exitCode).toBe(2);
  if (dataDir) expect(existsSync(dataDir) ? readdirSync(dataDir) : []).toEqual([]);
  return stderr.trim();
}

describe("settings", () => {
  test("a flag without its value is refused, not read as 1", async () => {
    const line = await expectOneLineFailure(["serve", "--http-port"], testEnv(join(freshDir(), "data")), "--http-port");
    expect(line).toContain("needs a value");
    await expectOneLineFailure(["--smtp-port", "--http-port", "0"], testEnv(join(freshDir(), "data")), "--smtp-port");
  }, 30_000);

  test("an unknown flag names the closest known one, with or without a value", async () => {
    expect(await expectOneLineFailure(["serve", "--htp-port", "0"], testEnv(join(freshDir(), "data")), "--htp-port")).toContain("did you mean --http-port?");
    expect(await expectOneLineFailure(["serve", "--htp-port"], testEnv(join(freshDir(), "data")), "--htp-port")).toContain("unknown flag (did you mean --http-port?)");
    expect(await expectOneLineFailure(["doctor", "--frobnicate"], testEnv(join(freshDir(), "data")), "--frobnicate")).toContain("unknown flag");
  });

  test("an argument or a switch the command does not take is refused, not ignored", async () => {
    const dataDir = join(freshDir(), "data");
    expect(await expectOneLineFailure(["backup", "a.db", "b.db"], testEnv(dataDir), "backup")).toContain("unexpected argument 'b.db'");
    expect(await expectOneLineFailure(["version", "extra"], testEnv(dataDir), "version")).toContain("unexpected argument 'extra'");
    expect(await expectOneLineFailure(["serve", "--force"], testEnv(dataDir), "--force", dataDir)).toContain("inboxd serve takes no such flag");
  });

  test.each([
    ["INBOXD_MAIL_DOMAIN", "bad domain"],
    ["INBOXD_HOSTNAME", "-x-"],
    ["INBOXD_HOSTNAME", "mx_1.example.com"],
    ["INBOXD_BIND", "notanip"],
  ])("%s=%s is not a valid name or address", async (name, value) => {
    const dataDir = join(freshDir(), "data");
    await expectOneLineFailure(["serve"], testEnv(dataDir, { [name]: value }), name, dataDir);
  });

  test("`inboxd dns` refuses a mail domain that is not a domain name instead of printing it", async () => {
    const { stdout, exitCode } = await runInboxd(["dns"], testEnv(join(freshDir(), "data"), { INBOXD_MAIL_DOMAIN: "bad domain" }));
    expect(exitCode).toBe(2);
    expect(stdout).toBe("");
  });

  test("an unknown INBOXD_ variable, a name in the --config file that is no setting, a single-label host name and mail domain are warned about at start, with the closest name", async () => {
    const configFile = join(freshDir(), "inboxd.env");
    writeFileSync(configFile, "INBOXD_HTTP_PROT=5\n");
    const env = testEnv(freshDir(), { INBOXD_SMTP_MAX_CONECTIONS: "5", INBOXD_HOSTNAME: "mailhost", INBOXD_MAIL_DOMAIN: "mail" });
    const child = keep(await startChildServer(env, { command: inboxdCommand(), args: ["--config", configFile] }));
        const warnings = child
      .output()
      .split("\n")
      .filter((line) => line.includes('"level":"warn"'))
      .map((line) => JSON.parse(line).event);
    expect(warnings).toContain("INBOXD_SMTP_MAX_CONECTIONS is not a setting of inboxd and is ignored (did you mean INBOXD_SMTP_MAX_CONNECTIONS?)");
    expect(warnings).toContain("INBOXD_HTTP_PROT is not a setting of inboxd and is ignored (did you mean INBOXD_HTTP_PORT?)");
    expect(warnings.some((warning: string) => warning.startsWith("INBOXD_HOSTNAME is 'mailhost', not a fully qualified name"))).toBe(true);
    expect(warnings.some((warning: string) => warning.startsWith("INBOXD_MAIL_DOMAIN is 'mail', not a domain with a dot"))).toBe(true);
  });
});

describe("sized to the machine", () => {
  const MiB = 1024 * 1024;

  test("SQLite's page cache: 1/256 of the memory, at least 2 MiB, at most 16", () => {
    expect([128, 512, 1024, 1536, 2048, 4096, 24 * 1024].map((mb) => defaultDbCacheMb(mb * MiB))).toEqual([2, 2, 4, 6, 8, 16, 16]);
  });

  test("the memory counted is the machine's or the process's cgroup limit, and --help shows the cache it gives", async () => {
    const memory = memoryForThisProcess();
    expect(memory).toBeGreaterThan(0);
    expect(memory).toBeLessThanOrEqual(totalmem());
    const { stdout } = await runInboxd(["--help"]);
    expect(stdout).toMatch(new RegExp(`INBOXD_DB_CACHE_MB +${defaultDbCacheMb(memory)} `));
  }, 30_000);
});

describe("start failures", () => {
  test("the HTTP port of a running inboxd is not shared: the second start fails with one line", async () => {
    const first = keep(await startChildServer(testEnv(freshDir()), { command: inboxdCommand() }));
        const dataDir = join(freshDir(), "data");
    const line = await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_HTTP_PORT: String(first.httpPort) }), "INBOXD_HTTP_PORT", dataDir);
    expect(line).toContain(`port ${first.httpPort} on 127.0.0.1 is in use by another process`);
    expect((await first.api.get("/health")).status).toBe(200);
  }, 30_000);

  test("a busy SMTP port", async () => {
    const busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const dataDir = join(freshDir(), "data");
      await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_SMTP_PORT: String(busy.port) }), "INBOXD_SMTP_PORT", dataDir);
    } finally {
      busy.stop(true);
    }
  });

  test("a bind address that is not this machine's", async () => {
    const dataDir = join(freshDir(), "data");
    // TEST-NET-1 (RFC 5737): never a local address; binding fails locally, nothing is sent.
    await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_BIND: "192.0.2.1", INBOXD_HTTP_PORT: "18" }), "INBOXD_BIND", dataDir);
  });

  test("an unreadable or invalid certificate", async () => {
    const dir = freshDir();
    const garbage = join(dir, "garbage.pem");
    writeFileSync(garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
    const dataDir = join(dir, "data");
    await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_TLS_CERT: garbage, INBOXD_TLS_KEY: garbage }), "INBOXD_TLS_CERT", dataDir);
    await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_TLS_CERT: join(dir, "missing.pem"), INBOXD_TLS_KEY: garbage }), "INBOXD_TLS_CERT", dataDir);
    // An empty file (a failed copy, a full disk) beside a good one: SMTP started and refused every STARTTLS.
    const good = selfSignedCert("mx.inboxd.test");
    const [cert, key, empty] = ["cert.pem", "key.pem", "empty.pem"].map((name) => join(dir, name));
    writeFileSync(cert, good.cert);
    writeFileSync(key, good.key);
    writeFileSync(empty!, "");
    await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_TLS_CERT: empty!, INBOXD_TLS_KEY: key! }), "INBOXD_TLS_CERT", dataDir);
    await expectOneLineFailure(["serve"], testEnv(dataDir, { INBOXD_TLS_CERT: cert!, INBOXD_TLS_KEY: empty! }), "INBOXD_TLS_CERT", dataDir);
  }, 30_000);

  test("a data dir that is a file", async () => {
    const file = join(freshDir(), "not-a-dir");
    writeFileSync(file, "");
    expect(await expectOneLineFailure(["serve"], testEnv(file), "INBOXD_DATA_DIR")).toContain("not a directory");
  });
});

describe("help and version", () => {
  test("-h, --help, --version and <command> --help for each command", async () => {
    for (const args of [["-h"], ["--help"], ["help"]]) {
      const { stdout, exitCode } = await runInboxd(args);
      expect(exitCode).toBe(0);
      expect(stdout).toContain("Usage: inboxd [command]");
      expect(stdout).toContain("INBOXD_METRICS_TOKEN");
    }
    expect((await runInboxd(["--version"])).stdout).toMatch(/^inboxd \d+\.\d+\.\d+/);
    for (const command of ["serve", "migrate", "version", "dns", "doctor", "backup", "restore"]) {
      const { stdout, exitCode } = await runInboxd([command, "--help"]);
      expect(exitCode).toBe(0);
      expect(stdout).toStartWith(`Usage: inboxd ${command === "serve" ? "[serve]" : command}`);
    }
    const unknown = await runInboxd(["frobnicate"]);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr.trim()).toBe("inboxd: unknown command 'frobnicate' (see inboxd --help)");
  }, 60_000);

  test("a database a newer inboxd migrated is refused by migrate and serve, in one line, rather than written into", async () => {
    const env = testEnv(join(freshDir(), "data"));
    expect((await runInboxd(["migrate"], env)).exitCode).toBe(0);
    const newer = "INSERT INTO schema_migrations (version, applied_at) VALUES ('9999_from_a_newer_inboxd', 0)";
    if (onPostgres) {
      const client = new SQL(env.INBOXD_DATABASE_URL!);
      await client.unsafe(newer);
      await client.close();
    } else {
      const database = new Database(join(env.INBOXD_DATA_DIR!, "inboxd.db"));
      database.exec(newer);
      database.close();
    }
    const setting = onPostgres ? "INBOXD_DATABASE_URL" : "INBOXD_DATA_DIR";
    for (const command of ["migrate", "serve"]) {
      expect(await expectOneLineFailure([command], env, setting)).toBe(`inboxd: ${setting}: the database was migrated by a newer inboxd (9999_from_a_newer_inboxd, unknown to this version): run that version, or restore a backup this version made`);
    }
  }, 30_000);

  test("migrate says what it applied, then that the database is current; dns says when it made the keys", async () => {
    const env = testEnv(join(freshDir(), "data"));
    // The database as the engine names it: the data dir's file, or PostgreSQL's host and database.
    const [database, first] = onPostgres ? ["PostgreSQL [^:]+:\\d+/\\w+", "0001_mail"] : [".*inboxd\\.db", "0001_core"];
    expect((await runInboxd(["migrate"], env)).stdout).toMatch(new RegExp(`^applied \\d+ migrations to ${database}: ${first}, `));
    expect((await runInboxd(["migrate"], env)).stdout).toMatch(new RegExp(`${database} is current: no migration to apply\n$`));
    const made = await runInboxd(["dns"], env);
    expect(made.stderr).toContain("inboxd dns: the DKIM keys did not exist yet: made now in");
    expect(made.stdout).toStartWith("; DNS records for inboxd.test");
    expect((await runInboxd(["dns"], env)).stderr).not.toContain("did not exist yet");
  }, 30_000);
});

describe("npm start", () => {
  test("a SIGTERM to npm stops the server it started: none is left holding the data dir and the ports", async () => {
    const env = testEnv(join(freshDir(), "data"));
    // A process group of its own: whatever the test finds, nothing it started outlives it.
    const npm = Bun.spawn(["npm", "start"], { cwd: join(import.meta.dir, "../.."), env: { ...process.env, ...env, INBOXD_LOG_LEVEL: "info" }, stdout: "ignore", stderr: "pipe", stdin: "ignore", detached: true });
    try {
      let output = "";
      const decoder = new TextDecoder();
      // The log (on stderr) says `ready` once every listener is up.
      for await (const chunk of npm.stderr) {
        output += decoder.decode(chunk, { stream: true });
        if (/\bready\b/.test(output)) break;
      }
      expect(output).toMatch(/\bready\b/);
      npm.kill("SIGTERM");
      await npm.exited;
      const freed = await eventually("the data dir to be free of the server", () => runInboxd(["migrate"], env), (result) => result.exitCode === 0, 20_000);
      expect(freed.stderr).not.toContain("in use");
    } finally {
      try {
        process.kill(-npm.pid, "SIGKILL");
      } catch {
        // The group is gone already: every process in it stopped.
      }
    }
  }, 60_000);
});
