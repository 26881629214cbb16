/**
 * The pool of connections to INBOXD_DATABASE_URL through Bun's built-in driver (Bun.sql), chosen
 * over the `postgres` package by measure (docs/architecture.md): on a local PostgreSQL 15, 10,000
 * one-row SELECTs by primary key took 100 µs each awaited one by one (postgres.js: 146-171) and 19-25
 * µs each when issued together (32-54); inserts were even (142 against 146-191). It also needs no
 * dependency. The URL's `sslmode` is the driver's; `sslrootcert=PATH` is read here (libpq's name),
 * the CA the server is verified against (verify-full).
 */
import { SQL } from "bun";
import { ANSWER_DEADLINE_SECONDS } from "./unavailable";

/** Connections per node: each transaction holds one from BEGIN to COMMIT. */
export const POOL_SIZE = 20;
/**
 * Seconds a new connection may take to be ready. Behind a pooler or proxy whose server is gone,
 * connections are accepted and never answered: with the driver's 30 s, every request and SMTP
 * transaction waited that long for its 503 or 451 (and a load balancer's shorter timeout saw none).
 */
export const CONNECT_TIMEOUT_SECONDS = 5;

/** The driver's "Failed to connect" names neither the server nor the setting (`where`: what named the URL). */
export function unreachable(error: unknown, databaseUrl: string, where: string): unknown {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string" || !code.startsWith("ERR_POSTGRES_CONNECTION")) return error;
  const { hostname, port } = new URL(databaseUrl);
  return new Error(`${where}: cannot reach PostgreSQL at ${hostname}:${port || 5432} (${(error as Error).message}, ${code})`);
}

/**
 * The server's own bound on a statement, and on a transaction left idle: twice the time a caller
 * waits for an answer (ANSWER_DEADLINE_SECONDS). The caller's deadline only stops the waiting:
 * without these, a statement it gave up on ran on and held its connection and its locks, and a
 * node frozen inside a transaction (a paused VM, SIGSTOP) held its row locks for as long as its
 * socket stayed open, stalling every other node's turns on those rows. PostgreSQL ends the one
 * (57014) and the session of the other (25P03); both are "unavailable" to the caller, tried again.
 */
export const SERVER_DEADLINE_SECONDS = 2 * ANSWER_DEADLINE_SECONDS;

/** The server settings of those bounds, as connectServing sends them. */
const SERVER_DEADLINE_SETTINGS = ["statement_timeout", "idle_in_transaction_session_timeout"] as const;

/** A pool on `databaseUrl`, with `settings` sent in each connection's StartupMessage: every connection has them from its start. */
export function connect(databaseUrl: string, settings: Record<string, string> = {}): SQL {
  const url = new URL(databaseUrl);
  const rootCert = url.searchParams.get("sslrootcert");
  url.searchParams.delete("sslrootcert");
  return new SQL(url.toString(), {
    max: POOL_SIZE,
    // Connections closed now and then, so that a pool whose server went away and came back heals.
    idleTimeout: 60,
    connectionTimeout: CONNECT_TIMEOUT_SECONDS,
    ...(Object.keys(settings).length ? { connection: settings } : {}),
    ...(rootCert ? { tls: Bun.file(rootCert) } : {}),
  });
}

/**
 * The serving node's pool: bounded by the server (SERVER_DEADLINE_SECONDS) in each setting the
 * operator left unset. A value of theirs (postgresql.conf, ALTER ROLE, ALTER DATABASE) stands, as
 * one sent at connection would override it; behind a pooler that refuses settings sent at
 * connection (PgBouncer's default), the role's are the way to set them, and then none is sent.
 */
export async function connectServing(databaseUrl: string): Promise<SQL> {
  const plain = connect(databaseUrl);
  const unset = await unsetDeadlines(plain).catch(async (error: unknown) => {
    await plain.close();
    throw error;
  });
  if (unset.length === 0) return plain;
  await plain.close();
  return connect(databaseUrl, Object.fromEntries(unset.map((name) => [name, `${SERVER_DEADLINE_SECONDS}s`])));
}

async function unsetDeadlines(client: SQL): Promise<string[]> {
  const [current] = (await client.unsafe(`SELECT ${SERVER_DEADLINE_SETTINGS.map((name) => `current_setting('${name}') AS ${name}`).join(", ")}`)) as Record<string, string>[];
  return SERVER_DEADLINE_SETTINGS.filter((name) => current![name] === "0");
}
