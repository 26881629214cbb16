import type { SearchableMessage, WalkStep } from "./store";

/** A read of at most `limit` rows, newest first: when it was full, the next read starts after its last row. */
export const walkStepOf = (rows: SearchableMessage[], limit: number): WalkStep => ({ rows, next: rows.length === limit ? rows.at(-1)!.position : undefined });
