/**
 * `inboxd db copy`: every row of a stopped installation's database into an empty database of
 * either engine, then checked. The driver here knows no engine: each engine's copy section
 * (sqlite/copy.ts, postgres/copy.ts) reads its tables as rows of plain values, in the words of the
 * shared schema (columns by their SQL names; timestamps as numbers, JSON as values, bytes as
 * Uint8Array, large values resolved from wherever the engine keeps them), and writes such rows
 * its own way. The check reads both sides back the same way: the row count and an
 * order-independent checksum of each table must agree.
 */
import { createHash } from "node:crypto";

export type CopyRow = Record<string, unknown>;

export interface CopyEndpoint {
  /** For messages: "SQLite /var/lib/inboxd/inboxd.db", "PostgreSQL db.example.net/inboxd". */
  description: string;
  /** The tables this engine copies, parents before the tables whose foreign keys name them. */
  tables(): Promise<string[]>;
  /** A table's columns by their SQL names. */
  columns(table: string): Promise<string[]>;
  count(table: string): Promise<number>;
  /** Every row of `table`, a batch at a time. */
  read(table: string): AsyncIterable<CopyRow[]>;
  /** The tables that already hold rows (a copy goes only into an empty database). */
  nonEmptyTables(): Promise<string[]>;
  write(table: string, rows: CopyRow[]): Promise<void>;
  /** After the last write: what the engine derives from the rows (search index, identity sequences). */
  finish(): Promise<void>;
  close(): Promise<void>;
}

export interface TableCopied {
  table: string;
  rows: number;
  checksum: string;
  /** The source's columns that the target engine does not have (its own bookkeeping, such as a lease holder). */
  leftOut: string[];
}

export interface CopyProgress {
  /** Called after each batch: the table, its rows copied so far and in all, and rows per second over the whole copy. */
  batch(table: string, copied: number, total: number, rowsPerSecond: number): void;
  tableDone(table: string, rows: number): void;
  verifying(): void;
  finish(): void;
}

/** Copies `from` into `to` (empty), then checks counts and checksums per table; throws on any difference. */
export async function copyDatabase(from: CopyEndpoint, to: CopyEndpoint, progress: CopyProgress): Promise<TableCopied[]> {
  const occupied = await to.nonEmptyTables();
  if (occupied.length) throw new Error(`${to.description} is not empty (${occupied.join(", ")} hold rows): a copy goes only into an empty database`);
  const sourceTables = new Set(await from.tables());
  const targetTables = await to.tables();
  const missing = [...sourceTables].filter((table) => !targetTables.includes(table));
  if (missing.length) throw new Error(`${to.description} has no table for ${missing.join(", ")}: are both on the same inboxd version?`);

  const tables = targetTables.filter((name) => sourceTables.has(name));
  // What each engine keeps only for itself (a lease holder, an ordering sequence) is not copied, nor compared.
  const shared = new Map<string, { columns: string[]; leftOut: string[] }>();
  for (const table of tables) {
    const [sourceColumns, targetColumns] = await Promise.all([from.columns(table), to.columns(table)]);
    shared.set(table, { columns: sourceColumns.filter((column) => targetColumns.includes(column)), leftOut: sourceColumns.filter((column) => !targetColumns.includes(column)) });
  }

  const started = performance.now();
  let copiedInAll = 0;
  for (const table of tables) {
    const { columns } = shared.get(table)!;
    const total = await from.count(table);
    let copied = 0;
    for await (const rows of from.read(table)) {
      await to.write(table, rows.map((row) => projected(row, columns)));
      copied += rows.length;
      copiedInAll += rows.length;
      progress.batch(table, copied, total, copiedInAll / Math.max((performance.now() - started) / 1000, 0.001));
    }
    progress.tableDone(table, copied);
  }
  await to.finish();

  progress.verifying();
  const report: TableCopied[] = [];
  for (const table of tables) {
    const { columns, leftOut } = shared.get(table)!;
    const [source, target] = await Promise.all([tableSum(from, table, columns), tableSum(to, table, columns)]);
    if (source.rows !== target.rows || source.checksum !== target.checksum) {
      throw new Error(`verification failed for ${table}: ${from.description} has ${source.rows} rows (checksum ${source.checksum}), ${to.description} ${target.rows} (checksum ${target.checksum})`);
    }
    report.push({ table, ...source, leftOut });
  }
  progress.finish();
  return report;
}

const MODULUS = 1n << 64n;

/**
 * The rows and a checksum of a table that does not depend on their order (the engines sort text
 * differently): the sum, modulo 2^64, of a SHA-256 prefix of each row in a canonical form.
 */
export async function tableSum(endpoint: CopyEndpoint, table: string, columns: string[]): Promise<{ rows: number; checksum: string }> {
  let rows = 0;
  let sum = 0n;
  for await (const batch of endpoint.read(table)) {
    for (const row of batch) {
      rows++;
      sum = (sum + createHash("sha256").update(canonical(projected(row, columns))).digest().readBigUInt64BE(0)) % MODULUS;
    }
  }
  return { rows, checksum: sum.toString(16).padStart(16, "0") };
}

const projected = (row: CopyRow, columns: string[]): CopyRow => Object.fromEntries(columns.map((column) => [column, row[column] ?? null]));

/** JSON with sorted keys (jsonb keeps its own key order), bytes as base64, whole floats as integers. */
export function canonical(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (value instanceof Uint8Array) return `"b64:${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64")}"`;
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonical(member)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Parents before children: `dependsOn` names, for each table, the tables its foreign keys reference. */
export function parentsFirst(tables: string[], dependsOn: (table: string) => string[]): string[] {
  const ordered: string[] = [];
  const visiting = new Set<string>();
  const visit = (table: string) => {
    if (ordered.includes(table) || visiting.has(table)) return;
    visiting.add(table);
    for (const parent of dependsOn(table)) if (parent !== table && tables.includes(parent)) visit(parent);
    visiting.delete(table);
    ordered.push(table);
  };
  for (const table of [...tables].sort()) visit(table);
  return ordered;
}

/** The command's progress on stderr: a bar with rows per second on a terminal, a plain line per table (and every 10 % of a large one) otherwise. */
export function copyProgress(stream: { isTTY?: boolean; write(text: string): unknown } = process.stderr): CopyProgress {
  const terminal = Boolean(stream.isTTY);
  let lastTenth = -1;
  let drawn = false;
  const clearLine = () => drawn && stream.write("\r\x1b[K");
  return {
    batch(table, copied, total, rowsPerSecond) {
      const fraction = total > 0 ? Math.min(1, copied / total) : 1;
      const rate = `${Math.round(rowsPerSecond)} rows/s`;
      if (terminal) {
        const width = 30;
        const filled = Math.round(fraction * width);
        stream.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${table} ${copied}/${total} ${rate}\x1b[K`);
        drawn = true;
      } else if (total >= 10_000 && Math.floor(fraction * 10) > lastTenth && fraction < 1) {
        lastTenth = Math.floor(fraction * 10);
        stream.write(`copy: ${table}: ${copied} of ${total} rows (${rate})\n`);
      }
    },
    tableDone(table, rows) {
      lastTenth = -1;
      clearLine();
      drawn = false;
      stream.write(`copy: ${table}: ${rows} rows\n`);
    },
    verifying() {
      stream.write("copy: verifying row counts and checksums\n");
    },
    finish() {
      clearLine();
    },
  };
}
