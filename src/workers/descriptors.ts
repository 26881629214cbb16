/**
 * Whether the process has file descriptors to spare for a new worker thread. Bun ends the whole
 * process ("bun ran out of file descriptors") when a worker cannot get the descriptors of its
 * own event loop, where a socket or a file only gets an error: a server whose connections had
 * taken its descriptors exited at the first message that needed an analysis thread. A pool then
 * does the work on the main thread. Linux's /proc tells; elsewhere there is room.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Descriptors a new thread takes (its event loop's, the runtime's own), with room left for the sockets that come meanwhile. */
const THREAD_DESCRIPTORS = 64;

export function roomForAThread(): boolean {
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    return limit === undefined || readdirSync("/proc/self/fd").length + THREAD_DESCRIPTORS <= Number(limit);
  } catch (error) {
    // The look itself needs a descriptor: none to be had is the answer.
    const code = (error as NodeJS.ErrnoException).code;
    return code !== "EMFILE" && code !== "ENFILE";
  }
}
