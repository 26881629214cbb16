/**
 * The embedded engine's copy section for `inboxd db copy` (../copy.ts): its tables as rows of plain
 * values and back. Rows are read straight off the file (a statement's iterator: a large database
 * is never in memory at once) and each column decoded by its drizzle column, as the aggregates read
 * it; values kept in blob chunks (./blobs.ts) come out whole, with no blob named. Rows are written
 * the same way back, values inline whatever their size: a copy runs with the server stopped, so no
 * one waits on the event loop for a large value.
 */
import type { Database, SQLQueryBindings } from "bun:sqlite";
import { getTableColumns, getTableName, is, Table, type Column } from "drizzle-orm";
import { headThenBlob } from "../chunks";
import { parentsFirst, type CopyEndpoint, type CopyRow } from "../copy";
import { migrate } from "./migrate";
import { openDatabase } from "./open";
import * as schema from "./schema/index";
import { searchIndexStore } from "./search-index";

/**
 * Tables that are the engine's own rather than the installation's: the migrations it ran, the
 * search index (rebuilt from the messages), and blob chunks (copied inside the rows that name them).
 */
const ENGINE_TABLES = /^(sqlite_|schema_migrations$|messages_fts|blob_chunks$|staged_blobs$)/;
const BATCH_ROWS = 500;
const BATCH_BYTES = 16 * 1024 * 1024;

/** The drizzle columns of each schema table by SQL name; a table outside the schema (secret_box) is copied as stored. */
const columnsByTable = new Map<string, Map<string, Column>>(
  (Object.values(schema) as unknown[])
    .filter((value): value is Table => is(value, Table))
    .map((table) => [getTableName(table), new Map(Object.values(getTableColumns(table)).map((column) => [column.name, column]))]),
);

/** The data dir `dataDir`'s database, locked against a server starting on it, and migrated to this version. */
/** `setting`: what named the data dir, for the errors. */
export function sqliteCopyEndpoint(dataDir: string, now: number, setting?: string): CopyEndpoint {
  const database = openDatabase(dataDir, { quickCheckWaitMs: 0, setting });
  try {
    migrate(database.sqlite, now);
  } catch (error) {
    database.close();
    throw error;
  }
  return copyEndpointOf(database.sqlite, `SQLite ${database.sqlite.filename}`, () => database.close());
}

export function copyEndpointOf(sqlite: Database, description: string, close: () => void): CopyEndpoint {
  const tableNames = sqlite
    .query<{ name: string }, []>("SELECT name FROM sqlite_schema WHERE type = 'table'")
    .all()
    .map((row) => row.name)
    .filter((name) => !ENGINE_TABLES.test(name));
  const columnsOf = (table: string) => sqlite.query<{ name: string }, []>(`PRAGMA table_info("${table}")`).all().map((row) => row.name);
  const parentsOf = (table: string) => sqlite.query<{ table: string }, []>(`PRAGMA foreign_key_list("${table}")`).all().map((row) => row.table);
  const chunksOf = sqlite.query<{ bytes: Uint8Array }, [string]>("SELECT bytes FROM blob_chunks WHERE blob_id = ?1 ORDER BY seq");

  /** A row as the aggregates read it, its blob (if any) put back in its bytes column. */
  function decoder(table: string) {
    const columns = columnsByTable.get(table);
    const bytesColumn = columns && columns.has("blob_id") ? [...columns.values()].find((column) => column.columnType === "SQLiteBlobBuffer")?.name : undefined;
    return (row: CopyRow): CopyRow => {
      if (columns) {
        for (const [name, value] of Object.entries(row)) {
          const column = columns.get(name);
          if (column && value !== null) row[name] = column.mapFromDriverValue(value);
        }
      }
      if (bytesColumn && row.blob_id) {
        row[bytesColumn] = headThenBlob(row[bytesColumn] as Uint8Array, Buffer.concat(chunksOf.all(row.blob_id as string).map((chunk) => chunk.bytes)));
        row.blob_id = null;
      }
      return row;
    };
  }

  return {
    description,
    tables: async () => parentsFirst(tableNames, parentsOf),
    columns: async (table) => columnsOf(table),
    count: async (table) => sqlite.query<{ n: number }, []>(`SELECT count(*) AS n FROM "${table}"`).get()!.n,
    async *read(table) {
      const decode = decoder(table);
      let batch: CopyRow[] = [];
      let bytes = 0;
      for (const stored of sqlite.query<CopyRow, []>(`SELECT * FROM "${table}"`).iterate()) {
        const row = decode(stored);
        batch.push(row);
        for (const value of Object.values(row)) if (value instanceof Uint8Array) bytes += value.byteLength;
        if (batch.length >= BATCH_ROWS || bytes >= BATCH_BYTES) {
          yield batch;
          batch = [];
          bytes = 0;
        }
      }
      if (batch.length) yield batch;
    },
    nonEmptyTables: async () => tableNames.filter((table) => sqlite.query(`SELECT 1 FROM "${table}" LIMIT 1`).get() !== null),
    async write(table, rows) {
      const names = Object.keys(rows[0]!);
      const columns = columnsByTable.get(table);
      // A row that a trigger wrote already (message_labels, from its message) is skipped; the check at the end would tell one that differs.
      const insert = sqlite.query(`INSERT OR IGNORE INTO "${table}" (${names.map((name) => `"${name}"`).join(", ")}) VALUES (${names.map((_, i) => `?${i + 1}`).join(", ")})`);
      const toStored = (name: string, value: unknown) => {
        const column = columns?.get(name);
        if (value === undefined) return null;
        // A JSON column's null is kept as the aggregates store it: the text "null".
        if (value === null) return column?.columnType === "SQLiteTextJson" ? "null" : null;
        return column ? column.mapToDriverValue(value) : value;
      };
      sqlite.transaction(() => {
        for (const row of rows) insert.run(...(names.map((name) => toStored(name, row[name])) as SQLQueryBindings[]));
      })();
    },
    async finish() {
      // The messages written are noted for the search index by their insert trigger (migrations/0050).
      sqlite.transaction(() => searchIndexStore(sqlite).indexAll())();
    },
    async close() {
      close();
    },
  };
}
