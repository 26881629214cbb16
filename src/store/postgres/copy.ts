/**
 * The PostgreSQL engine's copy section for `inboxd db copy` (../copy.ts): its tables as rows of
 * plain values and back, in the embedded engine's words (bigint milliseconds as numbers, jsonb as
 * values, bytea as bytes, large values whole out of blob_chunks with no blob named). Reads run in
 * one REPEATABLE READ transaction, so that a copy taken while other nodes still write is one
 * moment's database; they page by primary key, so a large table is never in memory at once.
 * Writes insert a batch per statement with each value cast to its column's type; a row that a
 * trigger wrote already (message_labels, from its message) is skipped, and the check at the end
 * would tell a row that differs. Identity sequences are moved past the copied ids at the end.
 */
import type { ReservedSQL, SQL as BunSql } from "bun";
import { headThenBlob } from "../chunks";
import { parentsFirst, type CopyEndpoint, type CopyRow } from "../copy";
import { connect, unreachable } from "./connection";
import { migrate } from "./migrate";

/** Tables that are the engine's own: its migrations, blob chunks (copied inside the rows that name them), and the nodes running on it. */
const ENGINE_TABLES = new Set(["schema_migrations", "blob_chunks", "staged_blobs", "nodes"]);
const BATCH_ROWS = 500;
/** PostgreSQL takes at most 65,535 parameters per statement. */
const MAX_PARAMETERS = 65_535;
const INTEGER_TYPES = new Set(["int2", "int4", "int8"]);

type Column = { name: string; type: string; identity: boolean };

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The database at `url`, migrated to this version; `where` names the URL's source in an error (the setting, or --to). */
export async function postgresCopyEndpoint(url: string, now: number, where: string): Promise<CopyEndpoint> {
  const client = connect(url);
  try {
    await migrate(client, now);
    return await copyEndpointOf(client, `PostgreSQL ${describeUrl(url)}`);
  } catch (error) {
    await client.close();
    throw unreachable(error, url, where);
  }
}

/** host:port/database, without the password. */
const describeUrl = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.host}${parsed.pathname}`;
};

async function copyEndpointOf(client: BunSql, description: string): Promise<CopyEndpoint> {
  const columnRows = (await client.unsafe(
    `SELECT c.table_name AS "table", c.column_name AS name, c.udt_name AS type, c.is_identity = 'YES' AS identity
       FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
      ORDER BY c.table_name, c.ordinal_position`,
  )) as (Column & { table: string })[];
  const columns = new Map<string, Column[]>();
  for (const row of columnRows) {
    if (ENGINE_TABLES.has(row.table)) continue;
    columns.set(row.table, [...(columns.get(row.table) ?? []), { name: row.name, type: row.type, identity: row.identity }]);
  }
  const keyRows = (await client.unsafe(
    `SELECT i.indrelid::regclass::text AS "table", a.attname AS name
       FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position)
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
      WHERE i.indisprimary ORDER BY 1, k.position`,
  )) as { table: string; name: string }[];
  const primaryKey = new Map<string, string[]>();
  for (const row of keyRows) primaryKey.set(row.table, [...(primaryKey.get(row.table) ?? []), row.name]);
  const foreignKeys = (await client.unsafe(`SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f'`)) as { child: string; parent: string }[];
  const tableNames = [...columns.keys()];

  /** One moment's database for every read of this copy. */
  let snapshot: ReservedSQL | undefined;
  const reader = async () => {
    if (!snapshot) {
      snapshot = await client.reserve();
      await snapshot.unsafe("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    }
    return snapshot;
  };

  const decode = (table: string, row: CopyRow, on: ReservedSQL) => decodeRow(columns.get(table)!, row, on);

  return {
    description,
    tables: async () => parentsFirst(tableNames, (table) => foreignKeys.filter((key) => key.child === table).map((key) => key.parent)),
    columns: async (table) => columns.get(table)!.map((column) => column.name),
    count: async (table) => Number(((await (await reader()).unsafe(`SELECT count(*) AS n FROM ${quoted(table)}`)) as { n: string }[])[0]!.n),
    async *read(table) {
      const on = await reader();
      const key = primaryKey.get(table) ?? columns.get(table)!.map((column) => column.name);
      const keyList = key.map(quoted).join(", ");
      let after: unknown[] | undefined;
      for (;;) {
        const where = after ? `WHERE (${keyList}) > (${key.map((_, i) => `$${i + 1}`).join(", ")})` : "";
        const rows = (await on.unsafe(`SELECT * FROM ${quoted(table)} ${where} ORDER BY ${keyList} LIMIT ${BATCH_ROWS}`, after ?? [])) as CopyRow[];
        if (rows.length === 0) return;
        after = key.map((name) => rows.at(-1)![name]);
        const decoded: CopyRow[] = [];
        for (const row of rows) decoded.push(await decode(table, row, on));
        yield decoded;
        if (rows.length < BATCH_ROWS) return;
      }
    },
    async nonEmptyTables() {
      const occupied: string[] = [];
      for (const table of tableNames) if (((await client.unsafe(`SELECT EXISTS (SELECT 1 FROM ${quoted(table)}) AS found`)) as { found: boolean }[])[0]!.found) occupied.push(table);
      return occupied;
    },
    async write(table, rows) {
      const targets = columns.get(table)!.filter((column) => column.name in rows[0]!);
      const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / targets.length));
      for (let start = 0; start < rows.length; start += perStatement) {
        const batch = rows.slice(start, start + perStatement);
        const parameters: unknown[] = [];
        const tuples = batch.map((row) => `(${targets.map((column) => `$${parameters.push(encodeValue(column, row[column.name]))}::${column.type}`).join(", ")})`);
        await client.unsafe(`INSERT INTO ${quoted(table)} (${targets.map((column) => quoted(column.name)).join(", ")}) OVERRIDING SYSTEM VALUE VALUES ${tuples.join(", ")} ON CONFLICT DO NOTHING`, parameters);
      }
    },
    async finish() {
      for (const [table, tableColumns] of columns) {
        for (const column of tableColumns.filter((c) => c.identity)) {
          await client.unsafe(`SELECT setval(pg_get_serial_sequence($1, $2), GREATEST((SELECT max(${quoted(column.name)}) FROM ${quoted(table)}), 1), (SELECT count(*) > 0 FROM ${quoted(table)}))`, [quoted(table), column.name]);
        }
      }
    },
    async close() {
      if (snapshot) {
        await snapshot.unsafe("COMMIT").catch(() => {});
        snapshot.release();
      }
      await client.close();
    },
  };
}

/** A row as the embedded engine would give it: integers as numbers, bytes as Buffers, its blob (if any) put back in its bytes column. */
async function decodeRow(columns: Column[], row: CopyRow, on: ReservedSQL): Promise<CopyRow> {
  for (const column of columns) {
    const value = row[column.name];
    if (value === null || value === undefined) continue;
    if (INTEGER_TYPES.has(column.type)) row[column.name] = Number(value);
    else if (column.type === "bytea") row[column.name] = Buffer.from(value as Uint8Array);
  }
  if (typeof row.blob_id === "string") {
    const bytesColumn = columns.find((column) => column.type === "bytea")!.name;
    const chunks = (await on.unsafe("SELECT bytes FROM blob_chunks WHERE blob_id = $1 ORDER BY seq", [row.blob_id])) as { bytes: Uint8Array }[];
    row[bytesColumn] = headThenBlob(row[bytesColumn] as Uint8Array, Buffer.concat(chunks.map((chunk) => chunk.bytes)));
    row.blob_id = null;
  }
  return row;
}

/** A value for `$n::type`; the driver encodes a jsonb parameter (the value itself, not its JSON text) by the type the statement gives it. */
function encodeValue(column: Column, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (column.type === "bool") return value === true || value === 1;
  return value;
}
