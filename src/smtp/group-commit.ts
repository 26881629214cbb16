// Group commit: the writes of many SMTP sessions that are ready at the same moment share one
// SQLite transaction and so one fsync (synchronous = FULL), while each session still learns its
// own outcome only after the commit that holds its write: its 250 waits for that commit.
import type { Store } from "../store";

export interface GroupCommit {
  /** Runs `write` in the next shared transaction, in a savepoint of its own; resolves after the commit. */
  run<T>(write: () => T): Promise<T>;
}

type Queued = { write: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void };
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export function createGroupCommit(store: Store): GroupCommit {
  let queued: Queued[] = [];

  // Scheduled with setImmediate: the writes that became ready while this turn of the event loop
  // handled I/O all join the same commit.
  function commit() {
    const batch = queued;
    queued = [];
    let outcomes: Outcome[];
    try {
      outcomes = store.transaction(() => batch.map(({ write }) => runAlone(store, write)));
    } catch (error) {
      for (const { reject } of batch) reject(error);
      return;
    }
    batch.forEach(({ resolve, reject }, index) => {
      const outcome = outcomes[index];
      if (outcome.ok) resolve(outcome.value);
      else reject(outcome.error);
    });
  }

  return {
    run<T>(write: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        if (queued.length === 0) setImmediate(commit);
        queued.push({ write, resolve: resolve as (value: unknown) => void, reject });
      });
    },
  };
}

/** A failing write rolls back its own savepoint only; the others in the batch still commit. */
function runAlone(store: Store, write: () => unknown): Outcome {
  try {
    return { ok: true, value: store.transaction(write) };
  } catch (error) {
    return { ok: false, error };
  }
}
