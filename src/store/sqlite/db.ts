import type { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema/index";

export type Db = ReturnType<typeof drizzleOf>;
export const drizzleOf = (sqlite: Database) => drizzle(sqlite, { schema });
