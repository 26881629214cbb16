/**
 * A list of values as one parameter for `IN` and `NOT IN` (./db.ts: listOf), as a subquery: one
 * statement text whatever the list's length, for the queues' hot statements.
 */
import { sql, type SQL } from "drizzle-orm";
import { listOf } from "./db";

export const textsOf = (values: readonly string[]): SQL => sql`(SELECT given.value FROM ${listOf(values)} AS given(value, position))`;

export const numbersOf = (values: readonly number[]): SQL => sql`(SELECT given.value::bigint FROM ${listOf(values.map(String))} AS given(value, position))`;
