/**
 * The store: the only code that speaks SQL. Services call these aggregates; a change that must be
 * atomic runs inside `transaction`, which nests (savepoints) and commits before the caller answers.
 * Calls are synchronous: one bun:sqlite connection, so an await inside a transaction would let
 * another request's statements into it.
 */
import type { Database } from "bun:sqlite";
import { accountsStore } from "./accounts";
import { drizzleOf } from "./db";
import { dkimKeysStore } from "./dkim-keys";
import { eventsStore } from "./events";
import { inboxesStore } from "./inboxes";

export function createStore(sqlite: Database) {
  const db = drizzleOf(sqlite);
  return {
    sqlite,
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn).immediate();
    },
    accounts: accountsStore(db),
    dkimKeys: dkimKeysStore(db),
    events: eventsStore(db),
    inboxes: inboxesStore(db),
  };
}

export type Store = ReturnType<typeof createStore>;
