/**
 * The store: the only code that speaks SQL. Services call these aggregates; a change that must be
 * atomic runs inside `transaction`, which nests (savepoints) and commits before the caller answers.
 * Calls are synchronous: one bun:sqlite connection, so an await inside a transaction would let
 * another request's statements into it.
 */
import type { Database } from "bun:sqlite";
import { accountsStore } from "./accounts";
import { deliveriesStore } from "./deliveries";
import { drizzleOf } from "./db";
import { dkimKeysStore } from "./dkim-keys";
import { domainsStore } from "./domains";
import { eventsStore } from "./events";
import { groupCommit } from "./group-commit";
import { inboxesStore } from "./inboxes";
import { loginThrottlesStore } from "./login-throttles";
import { webhookQueueStore } from "./webhook-queue";
import { webhooksStore } from "./webhooks";
import { messageSearchStore } from "./message-search";
import { messagesStore } from "./messages";
import { sendWindowsStore } from "./send-windows";
import { suppressionsStore } from "./suppressions";
import { threadsStore } from "./threads";

export function createStore(sqlite: Database) {
  const db = drizzleOf(sqlite);
  return {
    sqlite,
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn).immediate();
    },
    /** Like `transaction`, but shares its commit (one fsync) with the writes queued in the same event-loop turn; see group-commit.ts. */
    transactionBatched: groupCommit(sqlite),
    accounts: accountsStore(db),
    deliveries: deliveriesStore(db),
    dkimKeys: dkimKeysStore(db),
    domains: domainsStore(db),
    events: eventsStore(db),
    inboxes: inboxesStore(db),
    loginThrottles: loginThrottlesStore(db),
    webhooks: webhooksStore(db),
    webhookQueue: webhookQueueStore(db),
    messages: messagesStore(db),
    messageSearch: messageSearchStore(db),
    sendWindows: sendWindowsStore(db),
    suppressions: suppressionsStore(db),
    threads: threadsStore(db),
  };
}

export type Store = ReturnType<typeof createStore>;
