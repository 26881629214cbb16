/**
 * Group commit. Under `synchronous = FULL` every commit waits for an fsync, which caps
 * one-transaction-per-request writes at the disk's fsync rate. Writes queued here during one
 * turn of the event loop run together in one transaction, each in its own savepoint (a write
 * that throws is rolled back alone), and share one commit. Each caller's promise settles only
 * after that commit, so nothing is reported accepted before it is on disk.
 */
import type { Database } from "bun:sqlite";

interface Job {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export function groupCommit(sqlite: Database) {
  let queued: Job[] = [];

  const flush = () => {
    const jobs = queued;
    queued = [];
    const outcomes: Outcome[] = [];
    try {
      sqlite.transaction(() => {
        for (const job of jobs) {
          try {
            // Nested: a savepoint inside the shared transaction.
            outcomes.push({ ok: true, value: sqlite.transaction(job.write).immediate() });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      }).immediate();
    } catch (error) {
      for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.error);
    });
  };

  /** Runs `write` (synchronous) in the next shared transaction; settles after its commit. */
  return <T>(write: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      // setImmediate: after this turn's I/O callbacks, so concurrent requests join the same commit.
      if (queued.length === 0) setImmediate(flush);
      queued.push({ write, resolve: resolve as (value: unknown) => void, reject });
    });
}
