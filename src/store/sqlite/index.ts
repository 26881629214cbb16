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
import { blobStore } from "./blobs";
import { eventsStore } from "./events";
import { groupCommit } from "./group-commit";
import { inboxesStore } from "./inboxes";
import { loginThrottlesStore } from "./login-throttles";
import { webhookQueueStore } from "./webhook-queue";
import { webhooksStore } from "./webhooks";
import { messageSearchStore } from "./message-search";
import { messagesStore } from "./messages";
import { searchIndexStore } from "./search-index";
import { keylessBox, type SecretBox } from "./secrets";
import { sendWindowsStore } from "./send-windows";
import { suppressionsStore } from "./suppressions";
import { threadsStore } from "./threads";

/**
 * `secrets` seals webhook secrets and DKIM private keys as they are written and opens them as they
 * are read (./secrets); without it, as for the read-only look-ups of `inboxd dns` and `inboxd
 * doctor`, they are read as stored and cannot be written.
 */
export function createStore(sqlite: Database, options: { secrets?: SecretBox; onCommitted?: (seconds: number) => void } = {}) {
  const db = drizzleOf(sqlite);
  const secrets = options.secrets ?? keylessBox;
  const searchIndex = searchIndexStore(sqlite);
  const blobs = blobStore(sqlite);
  return {
    sqlite,
    blobs,
    transaction<T>(fn: () => T): T {
      // Nested: a savepoint of the enclosing transaction, which catches the index up itself.
      if (sqlite.inTransaction) return sqlite.transaction(fn).immediate();
      return sqlite
        .transaction(() => {
          const value = fn();
          searchIndex.catchUp();
          return value;
        })
        .immediate();
    },
    /**
     * Like `transaction`, but shares its commit with the writes queued meanwhile, and settles once
     * that commit is on disk, synced off the event loop; see group-commit.ts.
     */
    transactionBatched: groupCommit(sqlite, { beforeCommit: searchIndex.catchUp, onCommitted: options.onCommitted }),
    accounts: accountsStore(db),
    deliveries: deliveriesStore(db, blobs),
    dkimKeys: dkimKeysStore(db, secrets),
    domains: domainsStore(db),
    events: eventsStore(db),
    inboxes: inboxesStore(db),
    loginThrottles: loginThrottlesStore(db),
    webhooks: webhooksStore(db, secrets, blobs),
    webhookQueue: webhookQueueStore(db, secrets, blobs),
    messages: messagesStore(db, blobs),
    messageSearch: messageSearchStore(db),
    sendWindows: sendWindowsStore(db),
    suppressions: suppressionsStore(db),
    threads: threadsStore(db),
  };
}

export type Store = ReturnType<typeof createStore>;
