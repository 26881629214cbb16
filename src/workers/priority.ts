/**
 * A worker thread's share of the CPU beside the event loop. On Linux each thread has a nice value
 * of its own: setpriority(2) given a thread's id (PRIO_PROCESS, see its NOTES) changes that thread
 * alone, and the scheduler weighs the threads of every process by it.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";

/**
 * Lowers the calling thread's priority to `nice` (0 normal, 19 lowest): it then runs on what the
 * threads at normal priority leave. Where a thread has no id of its own to name (no
 * /proc/thread-self: other systems) or the call is refused, the thread keeps its priority: only
 * its share of a busy CPU is at stake, never its work.
 */
export function lowerThisThreadPriority(nice: number): void {
  try {
    setPriority(Number(readlinkSync("/proc/thread-self").split("/").at(-1)), nice);
  } catch {
    // See above: the thread goes on at the priority it has.
  }
}
