/**
 * The pool of connections to INBOXD_DATABASE_URL through Bun's built-in driver (Bun.sql), chosen
 * over the `postgres` package by measure (docs/architecture.md): on a local PostgreSQL 15, 10,000
 * one-row SELECTs by primary key took 100 µs each awaited one by one (postgres.js: 146-171) and 19-25
 * µs each when issued together (32-54); inserts were even (142 against 146-191). It also needs no
 * dependency. The URL's `sslmode` is the driver's; `sslrootcert=PATH` is read here (libpq's name),
 * the CA the server is verified against (verify-full).
 */
import { SQL } from "bun";

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

export function connect(databaseUrl: string): SQL {
  const url = new URL(databaseUrl);
  const rootCert = url.searchParams.get("sslrootcert");
  url.searchParams.delete("sslrootcert");
  return new SQL(url.toString(), {
    max: POOL_SIZE,
    // Connections closed now and then, so that a pool whose server went away and came back heals.
    idleTimeout: 60,
    connectionTimeout: CONNECT_TIMEOUT_SECONDS,
    ...(rootCert ? { tls: Bun.file(rootCert) } : {}),
  });
}
