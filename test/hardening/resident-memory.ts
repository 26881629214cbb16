// Resident memory of a process as /proc tells it, and the wait for inboxd at rest: shared by
// idle-memory.test.ts and bench/smtp-ingest.
import { readdirSync, readFileSync } from "node:fs";

export type Resident = { vmRss: number; rssAnon: number; rssFile: number; threads: string[] };

/** VmRSS, RssAnon (the heaps) and RssFile (the executable's pages read from its file) in MB, and the names of the threads. */
export function resident(pid: number): Resident {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const mb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
  const threads = readdirSync(`/proc/${pid}/task`).map((tid) => readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim());
  return { vmRss: mb("VmRSS"), rssAnon: mb("RssAnon"), rssFile: mb("RssFile"), threads };
}

/**
 * Resolves once the process runs no Worker thread: inboxd at rest, its threads that start on
 * demand stopped (the WAL checkpoint thread 10 s after the last write); throws after `timeoutMs`.
 */
export async function untilAtRest(pid: number, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; resident(pid).threads.includes("Worker"); await Bun.sleep(100)) {
    if (Date.now() > deadline) throw new Error(`still running worker threads after ${timeoutMs} ms: ${resident(pid).threads.join(", ")}`);
  }
}

export const describeResident = ({ vmRss, rssAnon, rssFile, threads }: Resident) => `${vmRss.toFixed(0)} MB (anonymous ${rssAnon.toFixed(0)}, file ${rssFile.toFixed(0)}; ${threads.length} threads)`;
