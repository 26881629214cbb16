// The storage at start: a data dir or database that inboxd cannot use is one line naming what is
// wrong (exit 2) and is left as it was; files are the owner's only whatever the umask; webhook
// secrets and DKIM private keys are sealed in the database with a key kept outside it.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { dkimVerify } from "mailauth";
import { openDatabase } from "../../src/store/sqlite/open";
import { createResolver } from "../../src/dns/resolver";
import type { OutboundQueue } from "../../src/outbound/queue";
import { serviceDomainRecords, zoneFileLines } from "../../src/outbound/service-domain";
import { parseSecretKey, secretBox } from "../../src/store/secret-box";
import { databaseOf, eventually, inboxdCommand, onPostgres, sqliteOnly, register, runInboxd, scratch, startChildServer, startTestServer, testEnv, type TestServer } from "../harness";
import { startDnsServer } from "../peers/dns-server";
import { startSmtpSink } from "../peers/smtp-sink";
import { startWebhookReceiver } from "../peers/webhook-receiver";
import { verifyStandardWebhook } from "../webhooks/standard-webhooks";

const { dir: freshDir, keep } = scratch();

/** Exactly one line on stderr, containing each of `naming`, exit code 2; the line. */
async function expectOneLineFailure(env: Record<string, string>, ...naming: string[]): Promise<string> {
  const { stderr, exitCode } = await runInboxd(["serve"], env);
  const lines = stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  for (const words of naming) expect(lines[0]).toContain(words);
  expect(exitCode).toBe(2);
  return lines[0]!;
}

/** Every file of a directory but the lock, with its size and a hash of its bytes: what "left as it was" compares. */
function snapshot(dir: string): Record<string, string> {
  const files = readdirSync(dir).filter((name) => name !== "inboxd.lock");
  return Object.fromEntries(files.sort().map((name) => [name, `${statSync(join(dir, name)).size}:${createHash("sha256").update(readFileSync(join(dir, name))).digest("hex")}`]));
}

/** A data dir of an installation that has run (`migrate` made its database and key file, `dns` its DKIM keys). */
async function installation(env: Record<string, string> = {}): Promise<{ dataDir: string; env: Record<string, string> }> {
  const dataDir = join(freshDir(), "data");
  const full = testEnv(dataDir, env);
  expect((await runInboxd(["migrate"], full)).exitCode).toBe(0);
  expect((await runInboxd(["dns"], full)).exitCode).toBe(0);
  return { dataDir, env: full };
}

/** Garbage over one page of a database file (pages count from 1). */
function overwritePage(file: string, page: number): void {
  const pageSize = new Database(file, { readonly: true }).query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
  const fd = openSync(file, "r+");
  try {
    writeSync(fd, randomBytes(pageSize), 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

describe("the data dir", () => {
  test("a file where the data dir (or a directory above it) should be", async () => {
    const file = join(freshDir(), "not-a-dir");
    writeFileSync(file, "");
    expect(await expectOneLineFailure(testEnv(file), "INBOXD_DATA_DIR", file)).toContain("not a directory");
    expect(await expectOneLineFailure(testEnv(join(file, "data")), "INBOXD_DATA_DIR")).toContain("not a directory");
  }, 30_000);

  // Root writes in any directory; as root the case runs as nobody through setpriv, where it exists.
  const isRoot = process.getuid?.() === 0;
  const asOtherUser = isRoot ? (Bun.which("setpriv") ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : undefined) : [];
  test.skipIf(asOtherUser === undefined)(`a data dir this user may not write is said so, not taken for a running inboxd${asOtherUser === undefined ? " — skipped: running as root without setpriv, where chmod 0500 does not stop writes" : ""}`, async () => {
    const { dataDir } = await installation();
    if (isRoot) chmodSync(join(dataDir, ".."), 0o755);
    chmodSync(dataDir, 0o500);
    try {
      const child = Bun.spawn([...asOtherUser!, ...inboxdCommand(), "serve"], { env: { ...process.env, ...testEnv(dataDir), HOME: "/tmp" }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
      const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      expect(stderr.trim()).toBe(`inboxd: INBOXD_DATA_DIR: ${dataDir} is not writable by this user`);
      expect(exitCode).toBe(2);
    } finally {
      chmodSync(dataDir, 0o700);
    }
  }, 30_000);

  test("the data dir is made 0700, and every file in it 0600, with umask 000", async () => {
    const dataDir = join(freshDir(), "made", "data");
    const child = keep(await startChildServer(testEnv(dataDir), { command: ["sh", "-c", 'umask 000; exec "$0" "$@"', ...inboxdCommand()] }));
    const account = await register(child.api);
    expect(account.inbox.email).toContain("@");
    const mode = (name: string) => (statSync(join(dataDir, name)).mode & 0o777).toString(8);
    expect(mode("")).toBe("700");
    // While it runs: the WAL and its index exist beside the database (on PostgreSQL, the node's own files only).
    const files = [...(onPostgres ? [] : ["inboxd.db", "inboxd.db-wal", "inboxd.db-shm"]), "inboxd.lock", "secret.key", "smtp-tls.key"];
    for (const name of files) expect({ name, mode: mode(name) }).toEqual({ name, mode: "600" });
    expect(await child.kill()).toBe(0);
  }, 30_000);
});

describe.skipIf(onPostgres)(sqliteOnly("a database file that is not this installation's", "the embedded database's file"), () => {
  test("an empty inboxd.db in the data dir of an installation that has run is refused and left as it was", async () => {
    const { dataDir, env } = await installation();
    writeFileSync(join(dataDir, "inboxd.db"), "");
    const before = snapshot(dataDir);
    const line = await expectOneLineFailure(env, "INBOXD_DATA_DIR", `${join(dataDir, "inboxd.db")} is empty`, "secret.key");
    expect(line).toContain("inboxd restore");
    expect(snapshot(dataDir)).toEqual(before);
    // So is a missing one: the installation's keys would be replaced as well.
    rmSync(join(dataDir, "inboxd.db"));
    expect(await expectOneLineFailure(env, "INBOXD_DATA_DIR", "is missing")).toContain("secret.key");
    expect(existsSync(join(dataDir, "inboxd.db"))).toBe(false);
  }, 30_000);

  test("an empty data dir, and an empty inboxd.db alone in one, are a new installation", async () => {
    const dataDir = join(freshDir(), "data");
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, "inboxd.db"), "");
    expect((await runInboxd(["migrate"], testEnv(dataDir))).exitCode).toBe(0);
    expect(existsSync(join(dataDir, "secret.key"))).toBe(true);
  }, 30_000);

  test("another program's SQLite database is refused and left as it was", async () => {
    const dataDir = freshDir();
    const foreign = new Database(join(dataDir, "inboxd.db"));
    foreign.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')");
    foreign.close();
    const before = snapshot(dataDir);
    await expectOneLineFailure(testEnv(dataDir), "INBOXD_DATA_DIR", "another program's SQLite database");
    expect(snapshot(dataDir)).toEqual(before);
  }, 30_000);

  test("a file that is not SQLite at all is refused and left as it was", async () => {
    const dataDir = freshDir();
    writeFileSync(join(dataDir, "inboxd.db"), "mail archive, not a database: ".repeat(300));
    const before = snapshot(dataDir);
    await expectOneLineFailure(testEnv(dataDir), "INBOXD_DATA_DIR", "is not an SQLite database");
    expect(snapshot(dataDir)).toEqual(before);
  }, 30_000);

  test("a PostgreSQL server that cannot be reached is one line naming the setting and the server, without the password (exit 1: systemd tries again)", async () => {
    const { stderr, exitCode } = await runInboxd(["serve"], testEnv(freshDir(), { INBOXD_DATABASE_URL: "postgres://inboxd:DbPW456@127.0.0.1:1/inboxd" }));
    expect(stderr.trim().split("\n")).toEqual(["inboxd: INBOXD_DATABASE_URL: cannot reach PostgreSQL at 127.0.0.1:1 (Failed to connect, ERR_POSTGRES_CONNECTION_REFUSED)"]);
    expect(exitCode).toBe(1);
  }, 30_000);
});

describe.skipIf(onPostgres)(sqliteOnly("a damaged database", "SQLite's quick_check of its file"), () => {
  /** A copy of a real installation's database and key, with garbage over the root page of dkim_keys (not page 1, which the start reads first). */
  async function damagedCopy(): Promise<string> {
    const { dataDir } = await installation();
    const copy = freshDir();
    for (const name of ["inboxd.db", "secret.key"]) copyFileSync(join(dataDir, name), join(copy, name));
    const sqlite = new Database(join(copy, "inboxd.db"), { readonly: true });
    const { rootpage } = sqlite.query<{ rootpage: number }, []>("SELECT rootpage FROM sqlite_schema WHERE name = 'dkim_keys'").get()!;
    sqlite.close();
    expect(rootpage).toBeGreaterThan(1);
    overwritePage(join(copy, "inboxd.db"), rootpage);
    return copy;
  }

  test("quick_check at start refuses it, in one line that points to inboxd restore", async () => {
    const copy = await damagedCopy();
    const line = await expectOneLineFailure(testEnv(copy), "INBOXD_DATA_DIR", `${join(copy, "inboxd.db")} is damaged`, "inboxd restore FILE --force");
    expect(line).not.toContain("already running");
    // Garbage over every page after the first is refused the same way.
    const { dataDir } = await installation();
    const file = join(dataDir, "inboxd.db");
    const pages = statSync(file).size / 4096;
    for (let page = 2; page <= pages; page++) overwritePage(file, page);
    await expectOneLineFailure(testEnv(dataDir), "INBOXD_DATA_DIR", "is damaged", "inboxd restore");
  }, 30_000);

  test("a check that outlasts the wait goes on beside the server and settles with its finding", async () => {
    const copy = await damagedCopy();
    const opened = openDatabase(copy, { quickCheckWaitMs: 0 });
    try {
      expect(opened.unfinishedCheck).toBeDefined();
      expect(await opened.unfinishedCheck).not.toBe("ok");
    } finally {
      opened.close();
    }
    const { dataDir } = await installation();
    const healthy = openDatabase(dataDir, { quickCheckWaitMs: 0 });
    try {
      expect(await healthy.unfinishedCheck).toBe("ok");
    } finally {
      healthy.close();
    }
  }, 30_000);
});

describe.skipIf(onPostgres)(sqliteOnly("secrets at rest", "reads the SQLite file's bytes (test/store/postgres-engine.test.ts checks the key on PostgreSQL)"), () => {
  /** inboxd in this process on `dataDir`, sending mail to loopback through `dns` and `sinkPort`. */
  const start = (dataDir: string, dnsAddress: string, sinkPort: number) =>
    startTestServer({ dataDir, env: { INBOXD_DNS_SERVERS: dnsAddress, INBOXD_OUTBOUND_PORT: String(sinkPort), INBOXD_SMTP_CLIENT_TIMEOUT_SCALE: "0.002" } });

  /** The database file and its WAL, as someone who copied them would read them. */
  const storedBytes = (dataDir: string) => Buffer.concat(["inboxd.db", "inboxd.db-wal"].map((name) => join(dataDir, name)).filter(existsSync).map((file) => readFileSync(file)));

  async function expectWebhookSigned(server: TestServer, receiver: ReturnType<typeof startWebhookReceiver>, webhook: { id: string; secret: string }, apiKey: string) {
    const before = receiver.requests.length;
    expect((await server.api.post(`/v1/webhooks/${webhook.id}/test`, undefined, apiKey)).status).toBe(200);
    const request = (await receiver.waitFor(before + 1))[before]!;
    expect(await verifyStandardWebhook(webhook.secret, request.headers, request.body, server.clock.now() / 1000)).toBe(true);
  }

  test("sealed in the database file; after a restart with the same key file, webhook signatures and DKIM signatures still verify", async () => {
    const dataDir = freshDir();
    const dns = await startDnsServer();
    const sink = await startSmtpSink();
    const receiver = startWebhookReceiver();
    try {
      let server = await start(dataDir, dns.address, sink.port);
      const account = await register(server.api);
      const apiKey = account.apiKey.key;
      const created = await server.api.post("/v1/webhooks", { url: receiver.url("/hook"), events: ["message.received"] }, apiKey);
      expect(created.status).toBe(201);
      const webhook = { id: created.body.id as string, secret: created.body.secret as string };
      expect((await server.api.post("/v1/domains", { name: "custom.example" }, apiKey)).status).toBe(201);
      await expectWebhookSigned(server, receiver, webhook, apiKey);
      await server.stop();

      const stored = storedBytes(dataDir);
      expect(stored.includes("PRIVATE KEY")).toBe(false);
      expect(stored.includes(webhook.secret.slice("whsec_".length))).toBe(false);
      const sqlite = new Database(join(dataDir, "inboxd.db"), { readonly: true });
      const keys = sqlite.query<{ domain: string; pem: string }, []>("SELECT domain, private_key_pem AS pem FROM dkim_keys").all();
      expect(keys.map((key) => key.domain).toSorted()).toEqual(["custom.example", "custom.example", "inboxd.test", "inboxd.test"]);
      for (const key of keys) expect(key.pem).toStartWith("enc:v1:");
      expect(sqlite.query<{ secret: string }, []>("SELECT secret FROM webhooks").get()!.secret).toStartWith("enc:v1:");
      sqlite.close();
      expect(statSync(join(dataDir, "secret.key")).mode & 0o777).toBe(0o600);

      server = await start(dataDir, dns.address, sink.port);
      try {
        await expectWebhookSigned(server, receiver, webhook, apiKey);
        dns.setZoneFile(zoneFileLines(server.app.config, await serviceDomainRecords(server.app.config, server.app.store)));
        dns.set("remote.test", "MX", [{ exchange: "mx.remote.test", priority: 10 }]);
        dns.set("mx.remote.test", "A", ["127.0.0.1"]);
        const sent = await server.api.request("POST", `/v1/inboxes/${account.inbox.id}/messages/send`, { token: apiKey, body: { to: ["pia@remote.test"], subject: "After the restart", text: "Signed.", html: "<p>Signed.</p>" } });
        expect(sent.status).toBe(201);
        await (server.running.parts.find((part) => part.name === "outbound") as OutboundQueue).runDueNow();
        const [received] = await eventually("the message at the sink", () => sink.messages, (messages) => messages.length > 0);
        const verified = await dkimVerify(received!.raw, { resolver: createResolver([dns.address]).forMailauth });
        expect(verified.results.map((result) => result.status?.result)).toEqual(["pass", "pass"]);
      } finally {
        await server.stop();
      }
    } finally {
      await sink.close();
      await dns.close();
      await receiver.close();
    }
  }, 60_000);

  test("secrets stored in the clear by an earlier inboxd are sealed at the first start, and keep working", async () => {
    const dataDir = freshDir();
    const receiver = startWebhookReceiver();
    try {
      let server = await startTestServer({ dataDir });
      const account = await register(server.api);
      const created = await server.api.post("/v1/webhooks", { url: receiver.url("/hook"), events: ["message.received"] }, account.apiKey.key);
      const webhook = { id: created.body.id as string, secret: created.body.secret as string };
      await server.stop();

      // The database as the inboxd before migration 0090 left it: secrets in the clear, no key file.
      const box = secretBox(parseSecretKey(readFileSync(join(dataDir, "secret.key"), "utf8"))!);
      const sqlite = new Database(join(dataDir, "inboxd.db"));
      for (const { id, pem } of sqlite.query<{ id: string; pem: string }, []>("SELECT id, private_key_pem AS pem FROM dkim_keys").all()) sqlite.query("UPDATE dkim_keys SET private_key_pem = ? WHERE id = ?").run(box.open(pem), id);
      sqlite.query("UPDATE webhooks SET secret = ?").run(webhook.secret);
      sqlite.exec("DROP TABLE secret_box; DELETE FROM schema_migrations WHERE version = '0090_secret_box'");
      sqlite.close();
      rmSync(join(dataDir, "secret.key"));
      expect(storedBytes(dataDir).includes("PRIVATE KEY")).toBe(true);

      server = await startTestServer({ dataDir });
      try {
        const stored = databaseOf(server.app);
        expect(stored.query<{ n: number }, []>("SELECT count(*) AS n FROM dkim_keys WHERE private_key_pem NOT LIKE 'enc:v1:%'").get()!.n).toBe(0);
        expect(stored.query<{ secret: string }, []>("SELECT secret FROM webhooks").get()!.secret).toStartWith("enc:v1:");
        expect(existsSync(join(dataDir, "secret.key"))).toBe(true);
        await expectWebhookSigned(server, receiver, webhook, account.apiKey.key);
        expect((await server.app.store.dkimKeys.activeForDomain("inboxd.test")).every((key) => key.privateKeyPem.startsWith("-----BEGIN PRIVATE KEY-----"))).toBe(true);
      } finally {
        await server.stop();
      }
    } finally {
      await receiver.close();
    }
  }, 60_000);

  test("a key that does not open the database's secrets, or none, is refused in one line naming the setting", async () => {
    const { dataDir, env } = await installation();
    const other = randomBytes(32);
    const line = await expectOneLineFailure({ ...env, INBOXD_SECRET_KEY: other.toString("base64") }, "INBOXD_SECRET_KEY", "another key");
    expect(line).not.toContain(other.toString("base64"));
    const malformed = await expectOneLineFailure({ ...env, INBOXD_SECRET_KEY: "hunter2" }, "INBOXD_SECRET_KEY", "32 bytes");
    expect(malformed).not.toContain("hunter2");

    const keyFile = join(dataDir, "secret.key");
    renameSync(keyFile, `${keyFile}.moved`);
    await expectOneLineFailure(env, "INBOXD_DATA_DIR", `${keyFile} is missing`);
    expect(existsSync(keyFile)).toBe(false);
    writeFileSync(keyFile, `${other.toString("hex")}\n`);
    await expectOneLineFailure(env, "INBOXD_DATA_DIR", `${keyFile} does not open the secrets`);

    // A key file that cannot be read (here a directory; a file of root's, mode 0600, for the service's user) fails alike: exit 2, not restarted.
    rmSync(keyFile);
    mkdirSync(keyFile);
    await expectOneLineFailure(env, `${keyFile} cannot be read (EISDIR): the key file must be readable by the user inboxd runs as`);
    rmSync(keyFile, { recursive: true });

    // The same key given as the setting (here in hex) opens them, with no key file needed.
    const key = parseSecretKey(readFileSync(`${keyFile}.moved`, "utf8"))!;
    expect((await runInboxd(["migrate"], { ...env, INBOXD_SECRET_KEY: key.toString("hex") })).exitCode).toBe(0);
    expect(existsSync(keyFile)).toBe(false);
  }, 30_000);

  test("inboxd dns on an installation that has its keys reads them and migrates nothing (the version still running there could not start again)", async () => {
    const { dataDir, env } = await installation();
    const database = join(dataDir, "inboxd.db");
    const zone = await runInboxd(["dns"], env);
    // The database as the version before migration 0260 left it.
    const older = new Database(database);
    older.exec("ALTER TABLE login_throttles DROP COLUMN previous_attempts; DELETE FROM schema_migrations WHERE version = '0260_login_previous_window'");
    older.close();
    const again = await runInboxd(["dns"], env);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toBe(zone.stdout);
    const sqlite = new Database(database, { readonly: true });
    try {
      expect(sqlite.query("SELECT count(*) AS n FROM schema_migrations WHERE version = '0260_login_previous_window'").get()).toEqual({ n: 0 });
    } finally {
      sqlite.close();
    }
  }, 30_000);

  test("a start refused for its key migrates nothing: the version before an upgrade still opens the database", async () => {
    const { dataDir, env } = await installation();
    // The database as the version before migration 0230 left it.
    const database = join(dataDir, "inboxd.db");
    const older = new Database(database);
    older.exec("ALTER TABLE messages DROP COLUMN received_digest; DELETE FROM schema_migrations WHERE version = '0230_received_digest'");
    older.close();
    const migrations = () => {
      const sqlite = new Database(database, { readonly: true });
      try {
        return sqlite.query<{ version: string }, []>("SELECT version FROM schema_migrations ORDER BY version").all().map(({ version }) => version);
      } finally {
        sqlite.close();
      }
    };
    const before = migrations();
    await expectOneLineFailure({ ...env, INBOXD_SECRET_KEY: randomBytes(32).toString("base64") }, "INBOXD_SECRET_KEY", "another key");
    const keyFile = join(dataDir, "secret.key");
    const key = readFileSync(keyFile);
    writeFileSync(keyFile, `${randomBytes(32).toString("hex")}\n`);
    await expectOneLineFailure(env, "INBOXD_DATA_DIR", `${keyFile} does not open the secrets`);
    expect(migrations()).toEqual(before);
    writeFileSync(keyFile, key);
    expect((await runInboxd(["migrate"], env)).exitCode).toBe(0);
    expect(migrations()).toEqual([...before, "0230_received_digest"].sort());
  }, 30_000);

  test("backup writes the key beside the copy; restore needs it and makes it the data dir's key", async () => {
    const { dataDir, env } = await installation();
    const backupFile = join(freshDir(), "nightly.db");
    const backup = await runInboxd(["backup", backupFile], env);
    expect(backup.exitCode).toBe(0);
    expect(backup.stdout).toContain(`its secrets open with the key in ${backupFile}.key`);
    expect(readFileSync(`${backupFile}.key`)).toEqual(readFileSync(join(dataDir, "secret.key")));
    expect(statSync(`${backupFile}.key`).mode & 0o777).toBe(0o600);

    const restoredDir = join(freshDir(), "restored");
    renameSync(`${backupFile}.key`, `${backupFile}.elsewhere`);
    const refused = await runInboxd(["restore", backupFile], testEnv(restoredDir));
    expect(refused.stderr.trim().split("\n")).toEqual([expect.stringContaining(`its key file ${backupFile}.key is missing`)]);
    expect(refused.exitCode).toBe(2);
    renameSync(`${backupFile}.elsewhere`, `${backupFile}.key`);
    const restored = await runInboxd(["restore", backupFile], testEnv(restoredDir));
    expect(restored.exitCode).toBe(0);
    expect(readFileSync(join(restoredDir, "secret.key"))).toEqual(readFileSync(join(dataDir, "secret.key")));
    expect((await runInboxd(["migrate"], testEnv(restoredDir))).exitCode).toBe(0);
  }, 30_000);

  test("a backup by hand of an installation that runs with INBOXD_SECRET_KEY, without it, is made and says which key its secrets need", async () => {
    const key = randomBytes(32).toString("base64");
    const { dataDir, env } = await installation({ INBOXD_SECRET_KEY: key });
    expect(existsSync(join(dataDir, "secret.key"))).toBe(false);
    const { INBOXD_SECRET_KEY: _, ...withoutKey } = env;
    const backupFile = join(freshDir(), "by-hand.db");
    const backup = await runInboxd(["backup", backupFile], withoutKey);
    expect(backup.exitCode).toBe(0);
    expect(backup.stdout).toContain("its secrets are sealed with a key this command was not given (no INBOXD_SECRET_KEY that opens them, no secret.key in the data dir): keep the INBOXD_SECRET_KEY the server runs with beside it");
    expect(existsSync(`${backupFile}.key`)).toBe(false);
    // Another key by hand is not the key its secrets open with (it was said to be).
    const withAnotherKey = await runInboxd(["backup", join(freshDir(), "another-key.db")], { ...withoutKey, INBOXD_SECRET_KEY: randomBytes(32).toString("base64") });
    expect(withAnotherKey.exitCode).toBe(0);
    expect(withAnotherKey.stdout).toContain("its secrets are sealed with a key this command was not given (no INBOXD_SECRET_KEY that opens them");
  }, 30_000);

  test("a backup by hand with an INBOXD_SECRET_KEY that is not the installation's copies the data dir's key beside it, with which it restores", async () => {
    const { dataDir, env } = await installation();
    expect(existsSync(join(dataDir, "secret.key"))).toBe(true);
    const backupFile = join(freshDir(), "wrong-key.db");
    const backup = await runInboxd(["backup", backupFile], { ...env, INBOXD_SECRET_KEY: randomBytes(32).toString("base64") });
    expect(backup.exitCode).toBe(0);
    expect(backup.stdout).toContain(`its secrets open with the key in ${backupFile}.key`);
    const restored = await runInboxd(["restore", backupFile], testEnv(join(freshDir(), "restored")));
    expect({ exitCode: restored.exitCode, stderr: restored.stderr }).toEqual({ exitCode: 0, stderr: "" });
  }, 30_000);
});
