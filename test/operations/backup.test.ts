// `inboxd backup` while the server takes mail, then `inboxd restore` into a fresh data dir: every
// message acknowledged before the backup began is there, and the restored server works.
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, inboxdCommand, onPostgres, register, runInboxd, scratch, sqliteOnly, startChildServer, testEnv } from "../harness";
import { openSession } from "../smtp/raw-client";

const { dir: freshDir, keep } = scratch();

test.skipIf(onPostgres)(sqliteOnly("a backup under an SMTP write load restores into a fresh data dir with everything acknowledged before it began", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const dataDir = freshDir();
  const env = testEnv(dataDir);
  const server = keep(await startChildServer(env, { command: inboxdCommand() }));
    const account = await register(server.api);

  // Writers that keep delivering over SMTP until told to stop; each 250 is an acknowledgement.
  const acknowledged: string[] = [];
  let writing = true;
  const writer = async (n: number) => {
    const session = await openSession(server.smtpPort!);
    await session.command("EHLO load.example");
    for (let i = 0; writing; i++) {
      const subject = `load ${n}-${i}`;
      await session.command("MAIL FROM:<load@example.org>");
      await session.command(`RCPT TO:<${account.inbox.email}>`);
      await session.command("DATA");
      const reply = await session.command(`Subject: ${subject}\r\nMessage-ID: <${n}-${i}@load.example>\r\n\r\n${"x".repeat(2000)}\r\n.`);
      if (reply.code === 250) acknowledged.push(subject);
    }
    await session.command("QUIT");
  };
  const writers = [1, 2, 3].map(writer);
  while (acknowledged.length < 50) await Bun.sleep(10);

  const before = [...acknowledged];
  const backupFile = join(freshDir(), "inboxd-backup.db");
  const backup = await runInboxd(["backup", backupFile], env);
  writing = false;
  await Promise.all(writers);
  expect(backup.stderr).not.toContain("error");
  expect(backup.exitCode).toBe(0);
  expect(backup.stdout).toContain(`backed up ${join(dataDir, "inboxd.db")} to ${backupFile}`);
  // Plain progress lines when stderr is not a terminal.
  expect(backup.stderr).toMatch(/backup: [\d.]+ MB of about [\d.]+ MB/);
  expect(acknowledged.length).toBeGreaterThan(before.length);
  // A second backup to the same name would overwrite the first: refused.
  expect((await runInboxd(["backup", backupFile], env)).exitCode).toBe(2);

  // Restoring while the server runs is refused, and so is replacing a database without --force.
  const refusedWhileRunning = await runInboxd(["restore", backupFile, "--force"], env);
  expect(refusedWhileRunning.exitCode).toBe(2);
  expect(refusedWhileRunning.stderr).toContain("stop it first");

  const restoredDir = join(freshDir(), "restored");
  const restoredEnv = testEnv(restoredDir);
  const restored = await runInboxd(["restore", backupFile], restoredEnv);
  expect(restored.stderr.trim()).toBe("");
  expect(restored.exitCode).toBe(0);
  expect(statSync(backupFile).mode & 0o777).toBe(0o600);
  expect(statSync(join(restoredDir, "inboxd.db")).mode & 0o777).toBe(0o600);
  const again = await runInboxd(["restore", backupFile], restoredEnv);
  expect(again.exitCode).toBe(2);
  expect(again.stderr).toContain("add --force");
  expect((await runInboxd(["restore", backupFile, "--force"], restoredEnv)).exitCode).toBe(0);

  await server.kill();
  const second = keep(await startChildServer(restoredEnv, { command: inboxdCommand() }));
  // What was accepted before the backup began is in it: stored, or accepted and analysed by the
  // restored server's inbound queue as it starts.
  const storedSubjects = async () => {
    const subjects = new Set<string>();
    for (let page = 1; ; page++) {
      const list = await second.api.get(`/v1/inboxes/${account.inbox.id}/messages?page=${page}&per=100`, account.apiKey.key);
      expect(list.status).toBe(200);
      for (const message of list.body) subjects.add(message.subject);
      if (list.body.length < 100) return subjects;
    }
  };
  const subjects = await eventually("the acknowledged messages in the restored inbox", storedSubjects, (stored) => before.every((subject) => stored.has(subject)));
  for (const subject of before) expect(subjects.has(subject)).toBe(true);
  // The restored server takes mail as before.
  const session = await openSession(second.smtpPort!);
  await session.command("EHLO after.example");
  await session.command("MAIL FROM:<after@example.org>");
  expect((await session.command(`RCPT TO:<${account.inbox.email}>`)).code).toBe(250);
  await session.command("DATA");
  expect((await session.command("Subject: after the restore\r\n\r\nHello.\r\n.")).code).toBe(250);
}, 90_000);

test.skipIf(onPostgres)(sqliteOnly("a backup killed as it starts writing leaves no file under its name; a second one to the name is refused until the first's .partial is gone", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const dir = freshDir();
  const env = testEnv(join(dir, "data"));
  expect((await runInboxd(["migrate"], env)).exitCode).toBe(0);
  const backupFile = join(dir, "cut-off.db");
  const child = Bun.spawn([...inboxdCommand(), "backup", backupFile], { env: { ...process.env, ...env }, stdout: "ignore", stderr: "ignore" });
  // Killed the moment the first of its files shows: the copy's, whatever it is called.
  while (!existsSync(backupFile) && !existsSync(`${backupFile}.partial`) && child.exitCode === null) await Bun.sleep(1);
  child.kill("SIGKILL");
  await child.exited;
  expect(existsSync(backupFile)).toBe(false);
  const again = await runInboxd(["backup", backupFile], env);
  expect(again.exitCode).toBe(2);
  expect(again.stderr.trim()).toBe(`inboxd: ${backupFile}.partial exists already, left by a backup that did not finish: remove it (and ${backupFile}.partial-journal, if there), or choose a new file name`);
  for (const left of [`${backupFile}.partial`, `${backupFile}.partial-journal`]) rmSync(left, { force: true });
  expect((await runInboxd(["backup", backupFile], env)).exitCode).toBe(0);
  expect(readdirSync(dir).filter((name) => name.startsWith("cut-off")).sort()).toEqual(["cut-off.db", "cut-off.db.key"]);
  expect((await runInboxd(["restore", backupFile], testEnv(join(dir, "restored")))).exitCode).toBe(0);
}, 60_000);

test.skipIf(onPostgres)(sqliteOnly("restore refuses a file that is not an inboxd database", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const dir = freshDir();
  const garbage = join(dir, "garbage.db");
  writeFileSync(garbage, "not a database at all, just text that is long enough to look like a file");
  const result = await runInboxd(["restore", garbage], testEnv(join(dir, "data")));
  expect(result.exitCode).toBe(2);
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  expect(result.stderr).toContain(garbage);
}, 30_000);

test.skipIf(onPostgres)(sqliteOnly("restore --force refuses a backup a newer inboxd made (this version could not start on it), before anything is replaced", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const env = testEnv(join(freshDir(), "data"));
  expect((await runInboxd(["migrate"], env)).exitCode).toBe(0);
  const backupFile = join(freshDir(), "newer.db");
  expect((await runInboxd(["backup", backupFile], env)).exitCode).toBe(0);
  const newer = new Database(backupFile);
  newer.query("INSERT INTO schema_migrations (version, applied_at) VALUES ('9999_from_the_future', 0)").run();
  newer.close();
  const database = join(env.INBOXD_DATA_DIR!, "inboxd.db");
  const before = readFileSync(database);
  const refused = await runInboxd(["restore", backupFile, "--force"], env);
  expect({ exitCode: refused.exitCode, stderr: refused.stderr.trim() }).toEqual({
    exitCode: 2,
    stderr: `inboxd: ${backupFile}: the database was migrated by a newer inboxd (9999_from_the_future, unknown to this version): run that version, or restore a backup this version made`,
  });
  expect(readFileSync(database).equals(before)).toBe(true);
}, 30_000);

test.skipIf(onPostgres)(sqliteOnly("a restore --force whose copy fails leaves the installation as it was: its key, its database, a server that starts", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const installation = async () => {
    const env = testEnv(join(freshDir(), "data"));
    const server = keep(await startChildServer(env, { command: inboxdCommand() }));
    await register(server.api);
    await server.kill();
    return env;
  };
  const kept = await installation();
  const other = await installation();
  const backupFile = join(freshDir(), "other.db");
  expect((await runInboxd(["backup", backupFile], other)).exitCode).toBe(0);

  const keyFile = join(kept.INBOXD_DATA_DIR!, "secret.key");
  const keyBefore = readFileSync(keyFile);
  // The copy cannot be written: a directory where its staging file goes.
  mkdirSync(join(kept.INBOXD_DATA_DIR!, "inboxd.db.restoring"));
  const failed = await runInboxd(["restore", backupFile, "--force"], kept);
  expect(failed.exitCode).not.toBe(0);
  expect(readFileSync(keyFile).equals(keyBefore)).toBe(true);
  const restarted = keep(await startChildServer(kept, { command: inboxdCommand() }));
  expect((await restarted.api.get("/health")).status).toBe(200);
}, 60_000);

test.skipIf(onPostgres)(sqliteOnly("the copy a restore killed while copying left beside the database is removed at the next start, with a warning", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const env = testEnv(join(freshDir(), "data"), { INBOXD_LOG_LEVEL: "warn" });
  const first = keep(await startChildServer(env, { command: inboxdCommand() }));
  await first.kill();
  const staging = join(env.INBOXD_DATA_DIR!, "inboxd.db.restoring");
  writeFileSync(staging, "a copy of a backup, cut short");
  writeFileSync(`${staging}-journal`, "its journal");
  const started = keep(await startChildServer(env, { command: inboxdCommand() }));
  expect((await started.api.get("/health")).status).toBe(200);
  expect([existsSync(staging), existsSync(`${staging}-journal`)]).toEqual([false, false]);
  expect(started.output()).toContain("removed the copy a restore that did not finish");
}, 60_000);

test.skipIf(onPostgres)(sqliteOnly("restore of a copy of a data dir taken while it ran (its -wal beside it) holds every acknowledged message", "backup and restore are of the embedded database (PostgreSQL has pg_dump)"), async () => {
  const env = testEnv(join(freshDir(), "data"));
  const server = keep(await startChildServer(env, { command: inboxdCommand() }));
  const account = await register(server.api);
  const session = await openSession(server.smtpPort!);
  await session.command("EHLO copy.example");
  for (let i = 0; i < 5; i++) {
    await session.command("MAIL FROM:<copy@example.org>");
    await session.command(`RCPT TO:<${account.inbox.email}>`);
    await session.command("DATA");
    expect((await session.command(`Subject: copied ${i}\r\nMessage-ID: <${i}@copy.example>\r\n\r\nHello.\r\n.`)).code).toBe(250);
  }
  // As a crash, or a file copy of the running data dir, leaves it: the newest commits in the WAL only.
  await server.kill("SIGKILL");
  const copy = freshDir();
  for (const [from, to] of [["inboxd.db", "inboxd.db"], ["inboxd.db-wal", "inboxd.db-wal"], ["secret.key", "inboxd.db.key"]] as const) writeFileSync(join(copy, to), readFileSync(join(env.INBOXD_DATA_DIR!, from)));
  expect(statSync(join(copy, "inboxd.db-wal")).size).toBeGreaterThan(0);

  const restoredEnv = testEnv(join(freshDir(), "restored"));
  const restored = await runInboxd(["restore", join(copy, "inboxd.db")], restoredEnv);
  expect(restored.exitCode).toBe(0);
  expect(readdirSync(restoredEnv.INBOXD_DATA_DIR!).filter((name) => name.includes("restoring"))).toEqual([]);
  const second = keep(await startChildServer(restoredEnv, { command: inboxdCommand() }));
  const subjects = async () => ((await second.api.get(`/v1/inboxes/${account.inbox.id}/messages?per=100`, account.apiKey.key)).body as { subject: string }[]).map((message) => message.subject).sort();
  await eventually("every acknowledged message in the restored inbox", subjects, (stored) => stored.length === 5);
  expect(await subjects()).toEqual([0, 1, 2, 3, 4].map((i) => `copied ${i}`));
}, 60_000);
