/**
 * Which committed events a reader may be shown. A commit that does not wait for the disk
 * (TransactionOptions.waitForDisk: the inbound queue's turns, a batch of writes until its group
 * sync) is read back at once, but a power loss before the next sync of the WAL would take it
 * back; an event stream that had shown its events would have shown events that never were. So
 * readers see events up to the newest known on disk, and are woken for newer ones once a sync
 * has covered them. Event ids grow in the order they are made (src/ids.ts), and this engine
 * commits one transaction at a time, so "up to an id" is "up to a commit".
 */
import type { Database } from "bun:sqlite";
import { testEventIdPrefix } from "../../events/names";
import type { SyncCommits } from "./group-commit";

/**
 * How a commit reaches the disk: `synced` by its own COMMIT (synchronous = FULL); `later`, by a
 * sync the watermark starts when the commit recorded events; `by its batch`, the group commit's
 * sync after it (./group-commit.ts).
 */
export type CommitDurability = "synced" | "later" | "by its batch";

export interface EventWatermark {
  /** An event was written, in the transaction under way or (outside one) committed with it. */
  emitted(id: string): void;
  /** After each commit; `withEvents` when it recorded events, whose readers are woken once they are on disk. */
  committed(durability: CommitDurability, withEvents: boolean): void;
  /** A group commit's sync starts: the function it returns marks what the sync covers as on disk, once it succeeded. */
  syncStarting(): () => void;
  /** The newest id readers may see, or null while every committed event is on disk. */
  visibleUpTo(): string | null;
}

/** `sync`: an fdatasync of the WAL; none for a database that is not in WAL mode, whose every commit is as durable as it gets. */
export function eventWatermark(sqlite: Database, sync: SyncCommits | undefined, wake: () => void): EventWatermark {
  // Webhook test events (ids from testEventIdPrefix up) are never read by event streams.
  const newestAtOpen = sqlite.query<{ id: string | null }, [string]>("SELECT max(id) AS id FROM events WHERE id < ?1").get(testEventIdPrefix)?.id ?? "";
  let emitted = newestAtOpen;
  let committed = newestAtOpen;
  let durable = newestAtOpen;
  /** Events committed by a batch: woken after its sync. */
  let wakeAfterBatch = false;
  let syncing = false;
  let again = false;

  /** What a sync starting now covers, marked on disk when it succeeded; readers woken if it covered new events. */
  const syncStarting = () => {
    const covered = committed;
    return () => {
      if (covered <= durable && !wakeAfterBatch) return;
      if (covered > durable) durable = covered;
      wakeAfterBatch = false;
      wake();
    };
  };

  /**
   * One sync at a time; commits made while one runs wait for the next, which covers them. A sync
   * that fails shows nothing: the events wait for the next commit's sync (the group commit reports
   * the failure to the writers meanwhile).
   */
  const syncThenWake = () => {
    if (syncing) {
      again = true;
      return;
    }
    syncing = true;
    const onDisk = syncStarting();
    void sync!()
      .then(onDisk, () => {})
      .then(() => {
        syncing = false;
        if (!again) return;
        again = false;
        syncThenWake();
      });
  };

  return {
    emitted(id) {
      emitted = id;
    },
    committed(durability, withEvents) {
      // An event of a rolled-back transaction leaves `emitted` past the newest committed one: no
      // harm, as every later event's id is larger still.
      committed = emitted;
      if (durability === "synced" || !sync) {
        durable = committed;
        if (withEvents) wake();
      } else if (!withEvents) return;
      else if (durability === "later") syncThenWake();
      else wakeAfterBatch = true;
    },
    syncStarting,
    visibleUpTo: () => (committed > durable ? durable : null),
  };
}
