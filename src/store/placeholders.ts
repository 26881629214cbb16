import { getTableColumns, sql, type Placeholder, type Table } from "drizzle-orm";

/** `{column: sql.placeholder(column)}` for every column of a table: one prepared INSERT of whole rows (either engine). */
export function placeholdersOf<T extends Table>(table: T) {
  return Object.fromEntries(Object.keys(getTableColumns(table)).map((key) => [key, sql.placeholder(key)])) as { [K in keyof T["_"]["columns"]]: Placeholder };
}
