/**
 * Whole rows of a table read with a bun:sqlite statement, for the store's hot reads. drizzle maps
 * every column of every row through generic code: presenting a message with its attachments and
 * deliveries (the outbound queue does it for each status change) took 56 µs through drizzle, 13
 * µs this way. Rows come out keyed as drizzle keys them; only the columns whose stored form differs
 * (JSON text, booleans, BLOBs as Buffers) are decoded, each by its own drizzle column.
 * Rows are put in order here, not by an ORDER BY: with bun:sqlite a statement with an ORDER BY
 * took 5-8 µs more per run than the same statement without, even where an index gives the order
 * and the bytecode is the same, and up to 50 µs in bench/outbound's larger database.
 */
import type { Database, SQLQueryBindings } from "bun:sqlite";
import { getTableColumns, getTableName, type Table } from "drizzle-orm";

// Columns whose value bun:sqlite returns as drizzle does.
const STORED_AS_READ = new Set(["SQLiteText", "SQLiteInteger", "SQLiteReal"]);

/** `SELECT <every column> FROM <table> WHERE <where>` (?1... parameters); `all` returns the rows sorted by `order`. */
export function rowReader<T extends Table, P extends SQLQueryBindings[]>(sqlite: Database, table: T, where: string, order?: (a: T["$inferSelect"], b: T["$inferSelect"]) => number) {
  const columns = Object.entries(getTableColumns(table));
  const select = columns.map(([key, column]) => `"${column.name}" AS "${key}"`).join(", ");
  const decoded = columns.filter(([, column]) => !STORED_AS_READ.has(column.columnType));
  // Typed by its parameters as a tuple, which bun:sqlite's own types cannot say of a generic P.
  const statement = sqlite.query(`SELECT ${select} FROM "${getTableName(table)}" WHERE ${where}`) as unknown as {
    get(...params: P): Record<string, unknown> | null;
    all(...params: P): Record<string, unknown>[];
  };
  const decode = (row: Record<string, unknown>): T["$inferSelect"] => {
    for (const [key, column] of decoded) if (row[key] !== null) row[key] = column.mapFromDriverValue(row[key]);
    return row as T["$inferSelect"];
  };
  return {
    get: (...params: P): T["$inferSelect"] | undefined => {
      const row = statement.get(...params);
      return row ? decode(row) : undefined;
    },
    all: (...params: P): T["$inferSelect"][] => {
      const rows = statement.all(...params).map(decode);
      return order ? rows.sort(order) : rows;
    },
  };
}
