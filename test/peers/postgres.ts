/**
 * A throwaway PostgreSQL cluster on loopback for the tests that need one of their own (the engine's
 * own tests, the unreachable-database test, the three-node test, `inboxd db copy`) and for .ci/run:
 * `initdb` into a temp dir, `pg_ctl start` on a free 127.0.0.1 port, run as an unprivileged user
 * (PostgreSQL refuses root), trust authentication on loopback, and removed again at stop.
 *
 * From the command line (.ci/run):
 *   bun test/peers/postgres.ts start DIR [PORT]   prints the cluster's URL; the cluster runs on
 *   bun test/peers/postgres.ts stop DIR
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { delimiter, join } from "node:path";
import { freePort } from "./ports";

const SUPERUSER = "inboxd";
const DEFAULT_DATABASE = "inboxd";

/** A PostgreSQL server program on PATH, else in Debian's versioned folder (`postgresql` puts only psql on PATH). */
export function postgresBinary(name: "initdb" | "pg_ctl" | "postgres"): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  const debian = "/usr/lib/postgresql";
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((version) => /^\d+$/.test(version))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const path = join(debian, version, "bin", name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

/** Why the tests that start a cluster of their own are skipped here, or undefined when they can run. */
export const postgresMissing =
  postgresBinary("initdb") && postgresBinary("pg_ctl") ? undefined : "PostgreSQL's initdb and pg_ctl are not installed (apt-get install -y postgresql; .ci/run installs it)";

/**
 * Why the tests that need PostgreSQL (a cluster of their own, or the suite's) are skipped in this
 * run, or undefined when they run. .ci/run sets INBOXD_TEST_POSTGRES=later for its SQLite run: they
 * run once, in its PostgreSQL run.
 */
export const postgresTestsSkipped: string | undefined =
  process.env.INBOXD_TEST_POSTGRES === "later" ? "run in the PostgreSQL run of the suite (INBOXD_TEST_POSTGRES=later)" : process.env.INBOXD_TEST_DATABASE_URL ? undefined : postgresMissing;

/** Running as root, the cluster's programs run as this user (PostgreSQL refuses to run as root). */
function unprivilegedUser(): { name: string; uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    const ids = spawnSync("id", ["-u", name], { encoding: "utf8" });
    const group = spawnSync("id", ["-g", name], { encoding: "utf8" });
    if (ids.status === 0 && group.status === 0) return { name, uid: Number(ids.stdout.trim()), gid: Number(group.stdout.trim()) };
  }
  throw new Error("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as");
}

function runAsClusterUser(program: string, args: string[]): void {
  const user = unprivilegedUser();
  const [command, argv] = user ? ["runuser", ["-u", user.name, "--", program, ...args]] : [program, args];
  const result = spawnSync(command, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (result.status !== 0) throw new Error(`${program} ${args.join(" ")} failed (${result.status}):\n${result.stdout}${result.stderr}`);
}

function stopServer(dir: string): void {
  runAsClusterUser(postgresBinary("pg_ctl")!, ["stop", "-w", "-m", "fast", "-D", join(dir, "data")]);
}

export interface ClusterOptions {
  /** Where the cluster lives; a new temp dir unless given. Removed at stop. */
  dir?: string;
  port?: number;
  /**
   * false (the default for tests): no fsync at all, which a throwaway cluster can afford. true: the
   * settings a production server has (the benchmarks compare engines with both syncing to disk).
   */
  durable?: boolean;
}

export interface PostgresCluster {
  dir: string;
  port: number;
  /** The URL of `database` (the cluster's own `inboxd` unless given) as its superuser. */
  url(database?: string): string;
  /** A new empty database; its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server and keeps its files, so that `start` brings it back (the unreachable-database test). */
  pause(): void;
  start(): void;
  /** Stops the server and removes its files. */
  stop(): void;
}

export async function startPostgresCluster(options: ClusterOptions = {}): Promise<PostgresCluster> {
  if (postgresMissing) throw new Error(postgresMissing);
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "inboxd-pg-"));
  mkdirSync(dir, { recursive: true });
  const port = options.port ?? (await freePort());
  const user = unprivilegedUser();
  if (user) chownSync(dir, user.uid, user.gid);
  chmodSync(dir, 0o700);
  const data = join(dir, "data");
  runAsClusterUser(postgresBinary("initdb")!, ["-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]);
  const settings = [
    `listen_addresses = '127.0.0.1'`,
    `port = ${port}`,
    // The socket beside the data, not in /var/run/postgresql, which an unprivileged user may not write.
    `unix_socket_directories = '${dir}'`,
    // Several inboxd nodes and test servers at once, each with its pool.
    `max_connections = 400`,
    ...(options.durable ? [] : ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]),
  ];
  writeFileSync(join(data, "postgresql.auto.conf"), settings.join("\n") + "\n");
  const pgCtl = postgresBinary("pg_ctl")!;
  const start = () => runAsClusterUser(pgCtl, ["start", "-w", "-t", "60", "-D", data, "-l", join(dir, "server.log")]);
  const pause = () => stopServer(dir);
  start();
  // A test process that ends without its afterAll (a hook timed out, a failure in beforeAll) still stops its cluster.
  const stopAtExit = () => {
    if (existsSync(join(data, "postmaster.pid"))) pause();
    rmSync(dir, { recursive: true, force: true });
  };
  if (!options.dir) process.on("exit", stopAtExit);
  const url = (database = DEFAULT_DATABASE) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  const cluster: PostgresCluster = {
    dir,
    port,
    url,
    createDatabase: (prefix) => createDatabase(url("postgres"), prefix),
    pause,
    start,
    stop() {
      process.off("exit", stopAtExit);
      try {
        pause();
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await createDatabase(url("postgres"), DEFAULT_DATABASE, { exactName: true });
  return cluster;
}

let databases = 0;

/** A new empty database on the server of `adminUrl` (a URL its user may create databases with); its URL. */
export async function createDatabase(adminUrl: string, prefix = "inboxd_test", { exactName = false } = {}): Promise<string> {
  const name = exactName ? prefix : `${prefix}_${process.pid}_${++databases}_${Date.now().toString(36)}`;
  const sql = new Bun.SQL(adminUrl, { max: 1 });
  try {
    await sql.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await sql.close();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A PostgreSQL server for a test file: the one .ci/run started when INBOXD_TEST_DATABASE_URL is set
 * (shared by every test; never stopped here), else a cluster of this file's own. Either way each
 * caller gets new empty databases from `createDatabase`.
 */
export async function testPostgres(): Promise<{ createDatabase(prefix?: string): Promise<string>; close(): Promise<void> }> {
  const shared = process.env.INBOXD_TEST_DATABASE_URL;
  if (shared) {
    const made: string[] = [];
    return {
      createDatabase: async (prefix) => {
        const url = await createDatabase(shared, prefix);
        made.push(new URL(url).pathname.slice(1));
        return url;
      },
      // The shared cluster outlives this file: its databases go with it.
      async close() {
        const sql = new Bun.SQL(shared, { max: 1 });
        try {
          for (const name of made) await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        } finally {
          await sql.close();
        }
      },
    };
  }
  const cluster = await startPostgresCluster();
  return { createDatabase: (prefix) => cluster.createDatabase(prefix), close: async () => cluster.stop() };
}

if (import.meta.main) {
  const [command, dir, port] = process.argv.slice(2);
  if (command === "start" && dir) {
    const cluster = await startPostgresCluster({ dir, port: port ? Number(port) : undefined });
    console.log(cluster.url());
  } else if (command === "stop" && dir) {
    if (existsSync(join(dir, "data", "postmaster.pid"))) stopServer(dir);
    rmSync(dir, { recursive: true, force: true });
  } else {
    console.error("usage: bun test/peers/postgres.ts start DIR [PORT] | stop DIR");
    process.exit(2);
  }
}
