/**
 * Group commit. A durable commit waits for an fsync of the WAL, and bun:sqlite would wait for it
 * on the event loop, where it holds up every SMTP session and request for the disk's latency.
 * Writes queued here run together in one transaction, each in its own savepoint (a write that
 * throws is rolled back alone), committed without that wait (./open.ts); the WAL is then synced
 * by an fdatasync on the runtime's thread pool, and each caller's promise settles only once that
 * sync is done: nothing is reported accepted before it is on disk, as under `synchronous = FULL`.
 * One sync runs at a time, and the writes queued meanwhile commit together when it ends: a slow
 * disk makes larger batches instead of a longer queue, one fsync each. A batch that changed no
 * row (a queue's turn that found nothing to do) has nothing to sync.
 */
import type { Database } from "bun:sqlite";
import { closeSync, existsSync, fdatasync, fstatSync, openSync, statSync } from "node:fs";

/** How one write of a batch ended. */
export type BatchOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Job<Tx> {
  write: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Makes the commits made so far durable. */
export type SyncCommits = () => Promise<void>;

export interface GroupCommitOptions<Tx> {
  /**
   * Runs the batch's writes in one transaction that commits without waiting for the disk, each
   * write alone in a savepoint; resolves with each write's outcome.
   */
  commitBatch: (writes: ((tx: Tx) => Promise<unknown>)[]) => Promise<BatchOutcome[]>;
  /**
   * An fdatasync of the database's WAL (walSync). A database that is not in WAL mode (an
   * in-memory one) commits as its connection is set up, and needs no sync of its own: undefined.
   */
  syncCommits: SyncCommits | undefined;
  /** Told each batch's commit time, from the transaction's start until it is on disk (metrics). */
  onCommitted?: (seconds: number) => void;
  /** Told as a batch's sync starts; the function it returns, once the sync succeeded. */
  syncStarting?: () => () => void;
}

export function groupCommit<Tx>(sqlite: Database, { commitBatch, syncCommits, onCommitted = () => {}, syncStarting = () => () => {} }: GroupCommitOptions<Tx>) {
  let queued: Job<Tx>[] = [];
  /** A batch is scheduled, or committed and waiting for its sync. */
  let busy = false;

  const schedule = () => {
    if (busy || queued.length === 0) return;
    busy = true;
    // setImmediate: after this turn's I/O callbacks, so concurrent requests join the same commit.
    setImmediate(flush);
  };

  const totalChanges = sqlite.query<{ changes: number }, []>("SELECT total_changes() AS changes");
  const changesSoFar = () => totalChanges.get()!.changes;

  async function flush() {
    const jobs = queued;
    queued = [];
    let outcomes: BatchOutcome[];
    let syncError: unknown;
    const startedAt = performance.now();
    try {
      const before = changesSoFar();
      outcomes = await commitBatch(jobs.map((job) => job.write));
      if (syncCommits && changesSoFar() !== before) {
        const synced = syncStarting();
        await syncCommits().then(synced, (error: unknown) => (syncError = error ?? new Error("sync failed")));
      }
      onCommitted((performance.now() - startedAt) / 1000);
    } catch (error) {
      outcomes = jobs.map(() => ({ ok: false, error }));
    }
    busy = false;
    schedule();
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (!outcome.ok) job.reject(outcome.error);
      else if (syncError !== undefined) job.reject(syncError);
      else job.resolve(outcome.value);
    });
  }

  /** Runs `write` in the next shared transaction; settles once its commit is on disk. */
  return <T>(write: (tx: Tx) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queued.push({ write, resolve: resolve as (value: unknown) => void, reject });
      schedule();
    });
}

/** The WAL's sync, and the descriptor it holds to give back when the database closes. */
export interface WalSync {
  sync: SyncCommits;
  close(): void;
}

/**
 * fdatasync of the WAL file: it covers every frame written before it, so every commit made so far.
 * A checkpoint that copies frames into the database file syncs the WAL first and the database after
 * (SQLite's order), and the WAL starts over only once all of it is in the database, so a commit
 * never leaves the WAL before it is on disk. Undefined when the database has no WAL.
 *
 * The WAL is opened once and kept: opened for each sync, a process out of descriptors failed the
 * sync of commits already made. SQLite truncates its WAL but keeps the file while a connection is
 * open; a database file or WAL deleted (or replaced) under the running server still takes writes
 * and syncs, and is gone at the next start: no commit is durable there, so the sync fails.
 */
export function walSync(sqlite: Database): WalSync | undefined {
  const mode = sqlite.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode;
  if (mode !== "wal") return undefined;
  const walPath = `${sqlite.filename}-wal`;
  const databaseInode = statSync(sqlite.filename).ino;
  let wal: { fd: number; inode: number } | undefined;
  const openWal = () => {
    const fd = openSync(walPath, "r");
    wal = { fd, inode: fstatSync(fd).ino };
    return wal;
  };
  const closeWal = () => {
    if (wal) closeSync(wal.fd);
    wal = undefined;
  };
  const syncedWal = () => {
    const onDisk = statSync(walPath, { throwIfNoEntry: false });
    if (!onDisk || statSync(sqlite.filename, { throwIfNoEntry: false })?.ino !== databaseInode) {
      throw new Error(`${onDisk ? sqlite.filename : walPath} was deleted or replaced while inboxd runs: what it commits there is lost at the next start`);
    }
    if (!wal) return openWal();
    // SQLite keeps its WAL's file while the connection is open (a checkpoint truncates it): another
    // file there was made by another opener after this one was deleted, and this connection's
    // commits still go to the deleted one.
    if (wal.inode !== onDisk.ino) throw new Error(`${walPath} was deleted or replaced while inboxd runs: what it commits there is lost at the next start`);
    return wal;
  };
  if (existsSync(walPath)) openWal();
  return {
    sync: () =>
      new Promise<void>((resolve, reject) => {
        let fd: number;
        try {
          fd = syncedWal().fd;
        } catch (error) {
          return reject(error);
        }
        fdatasync(fd, (error) => (error ? reject(error) : resolve()));
      }),
    close: closeWal,
  };
}

/**
 * A sync that fails leaves commits made, and seen by every reader, that may not be on disk: no
 * caller may be told they failed (a send's retry would go out twice) nor that they are durable.
 * With `onFailure` (the server's: it stops, and the next start recovers what the disk holds, as
 * PostgreSQL does after a failed fsync), their callers are never answered; without, the failure
 * is theirs.
 */
export function stoppingOnFailedSync(sync: SyncCommits | undefined, onFailure: ((error: unknown) => void) | undefined): SyncCommits | undefined {
  if (!sync || !onFailure) return sync;
  return () =>
    sync().catch((error: unknown) => {
      onFailure(error);
      return new Promise<void>(() => {});
    });
}

/**
 * One sync at a time for every writer of the database (the group commit, the events' watermark):
 * a request made while a sync runs is served by the next one, which covers it, and every request
 * made meanwhile shares that next one. Two writers syncing on their own doubled the fdatasyncs
 * under inbound mail.
 */
export function oneSyncAtATime(sync: SyncCommits | undefined): SyncCommits | undefined {
  if (!sync) return undefined;
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = () => {
    const started = sync().finally(() => {
      if (running === started) running = undefined;
    });
    running = started;
    return started;
  };
  return () => {
    // `next` first: it is cleared only as its sync starts, while `running` may already be cleared before.
    if (next) return next;
    if (!running) return start();
    next = running
      .catch(() => {})
      .then(() => {
        next = undefined;
        return start();
      });
    return next;
  };
}
