/**
 * process.exit once what was written to stdout and stderr has left. Writes to a pipe (journald, a
 * parent process) are asynchronous in Bun, and an exit drops what is still queued: the last log
 * line ("stopped"), or the end of a command's output. Ending a stream calls back once it is
 * flushed; a stream that fails, or a reader that never reads again, holds the exit back 2 s at most.
 */
export function exitOnceWritten(code: number): void {
  const exit = () => process.exit(code);
  setTimeout(exit, 2_000);
  let open = 2;
  for (const stream of [process.stdout, process.stderr]) {
    stream.once("error", exit);
    stream.end(() => --open === 0 && exit());
  }
}
