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

/**
 * A pool on `databaseUrl`. With `serverDeadlines` false (a copy between engines, whose reads
 * run long by design), statements and transactions are not bounded by the server.
 */
export function connect(databaseUrl: string, { serverDeadlines = true }: { serverDeadlines?: boolean } = {}): SQL {
  const url = new URL(databaseUrl);
  const rootCert = url.searchParams.get("sslrootcert");
  url.searchParams.delete("sslrootcert");
  return new SQL(url.toString(), {
    max: POOL_SIZE,
    // Connections closed now and then, so that a pool whose server went away and came back heals.
    idleTimeout: 60,
    connectionTimeout: CONNECT_TIMEOUT_SECONDS,
    // Sent in each connection's StartupMessage: every connection of the pool has them from its start.
    ...(serverDeadlines ? { connection: { statement_timeout: `${SERVER_DEADLINE_SECONDS}s`, idle_in_transaction_session_timeout: `${SERVER_DEADLINE_SECONDS}s` } } : {}),
    ...(rootCert ? { tls: Bun.file(rootCert) } : {}),
  });
}
