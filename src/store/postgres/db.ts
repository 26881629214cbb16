/**
 * What every aggregate of the PostgreSQL engine is written against: `PgDb`, the drizzle database
 * over Bun's built-in driver (Bun.sql), which is the pool outside a transaction and the
 * transaction's own connection inside one (./index.ts builds the aggregates on each, a
 * transaction's when first used). An aggregate is `export function fooStore(db: PgDb, …): FooStore`.
 */
import type { SQL as BunSql } from "bun";
import { sql, type SQL } from "drizzle-orm";
import { drizzle, type BunSQLQueryResultHKT } from "drizzle-orm/bun-sql";
import type { PgDatabase } from "drizzle-orm/pg-core";

export type PgDb = PgDatabase<BunSQLQueryResultHKT>;

export const drizzleOn = (client: BunSql): PgDb => drizzle({ client });

/** A statement drizzle prepared with placeholders (a query builder's `.prepare(name)`). */
interface PreparedStatement<Result> {
  execute(values: Record<string, unknown>): Promise<Result>;
}

/**
 * A query builder's statement, rendered to SQL once. drizzle renders a builder's SQL anew at each
 * call: under inbound mail on PostgreSQL that was 45 % of the event loop's samples, most of it the
 * six statements every received message runs (docs/benchmarks.md, "PostgreSQL: statements
 * rendered once"). `build` is prepared with placeholders the first time the statement runs; every
 * run executes that text with its values on the connection of the `db` it is given (the pool, or a
 * transaction's own: the client of its drizzle session, which a prepared statement reads as its
 * `client`).
 */
export function renderedOnce<Result>(build: (db: PgDb) => { prepare(name: string): PreparedStatement<Result> }): (db: PgDb, values: object) => Promise<Result> {
  let prepared: PreparedStatement<Result> | undefined;
  return (db, values) => {
    prepared ??= build(db).prepare("");
    const onConnection: PreparedStatement<Result> = Object.create(prepared, { client: { value: (db._.session as unknown as { client: BunSql }).client } });
    return onConnection.execute(values as Record<string, unknown>);
  };
}

/**
 * The rows of a raw statement, named as its SELECT names them. bigint columns come back as
 * strings from the driver: cast what must be a number in the statement (`::int`) or with Number.
 */
export async function rowsOf<T>(db: PgDb, query: SQL): Promise<T[]> {
  return (await db.execute(query)) as unknown as T[];
}

export async function firstRow<T>(db: PgDb, query: SQL): Promise<T | undefined> {
  return (await rowsOf<T>(db, query))[0];
}

/** `text` for LIKE and ILIKE, its wildcards and the escape character taken literally. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** `%text%`: LIKE and ILIKE patterns of values that hold `text`. */
export const likeContaining = (text: string) => `%${likeLiteral(text)}%`;

/** `text%`: LIKE patterns of values that start with `text`. */
export const likePrefix = (text: string) => `${likeLiteral(text)}%`;

/**
 * A list of values as a set-returning function for `FROM … AS ids(id, position)`, in the order
 * given: one parameter of JSON text, whatever the list's length.
 */
export const listOf = (values: readonly string[]) => sql`jsonb_array_elements_text(${JSON.stringify(values)}::text::jsonb) WITH ORDINALITY`;

/**
 * Takes transaction-scoped advisory locks on `keys` (in one order, so that two takers never wait
 * on each other): the embedded engine runs one transaction at a time, so a service may read a row
 * and then write it as the read found it; here a transaction that reads a key this way holds the
 * key until it ends, and a second one reads after the first's commit. Outside a transaction
 * (`inTransaction` false) nothing is written after the read, and no lock is taken.
 */
export async function lockKeys(db: PgDb, inTransaction: boolean, keys: readonly string[]): Promise<void> {
  if (!inTransaction || keys.length === 0) return;
  await db.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(ids.id, 0)) FROM ${listOf([...keys].sort())} AS ids(id, position) ORDER BY ids.position`);
}
