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

export interface EventWatermark {
  /** An event was written, in the transaction under way or (outside one) committed with it. */
  emitted(id: string): void;
  /**
   * After each commit: `onDisk` when it synced the WAL itself (synchronous = FULL), `withEvents`
   * when it recorded events, whose readers are woken once they are on disk.
   */
  committed(onDisk: boolean, withEvents: boolean): void;
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
  let syncing = false;
  let again = false;

  /** One sync at a time; commits made while one runs wait for the next, which covers them. */
  const syncThenWake = () => {
    if (syncing) {
      again = true;
      return;
    }
    syncing = true;
    const covered = committed;
    // A failed sync still wakes: the batch waiting on its own sync reports the failure.
    void sync!()
      .catch(() => {})
      .then(() => {
        syncing = false;
        if (covered > durable) durable = covered;
        wake();
        if (!again) return;
        again = false;
        syncThenWake();
      });
  };

  return {
    emitted(id) {
      emitted = id;
    },
    committed(onDisk, withEvents) {
      // An event of a rolled-back transaction leaves `emitted` past the newest committed one: no
      // harm, as every later event's id is larger still.
      committed = emitted;
      if (onDisk || !sync) durable = committed;
      if (!withEvents) return;
      if (durable === committed) wake();
      else syncThenWake();
    },
    visibleUpTo: () => (committed > durable ? durable : null),
  };
}
