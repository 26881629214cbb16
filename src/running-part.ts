/**
 * One part `inboxd serve` starts and stops (src/serve.ts): a listener, a queue, a background job.
 * A leaf module, so that the parts need not import serve.ts, which imports them all.
 */
import { recurringFailureLog, type Logger } from "./log";

export interface RunningPart {
  name: string;
  /** Listener address for the start-up line, when the part listens. */
  address?: { host: string; port: number };
  stop(): Promise<void>;
}

/** Parts that start and stop together, as one. */
export function runningTogether(name: string, parts: RunningPart[]): RunningPart {
  return { name, stop: async () => void (await Promise.all(parts.map((part) => part.stop()))) };
}

/** What a background job's `work` may ask: whether the part is stopping, so that a long run ends early. */
export type Stopping = () => boolean;

/**
 * A background job: `work` every `intervalMs`, never two runs at once (a tick during a run is
 * skipped), a failure tried again at the next tick and logged as `failure.event` in runs (the
 * first, then one a minute, then "works again": jobs that tick every second logged 3,600 lines
 * with stacks an hour while the database was down). Stopping ends the ticks and waits for the run
 * in progress, at most what `stopWaitMs` gives when given (a run cut short is due again).
 */
export function runEvery(name: string, intervalMs: number, work: (stopping: Stopping) => Promise<void>, failure: { log: Logger; event: string }, options: { stopWaitMs?: () => number } = {}): RunningPart {
  let stopped = false;
  let run: Promise<void> | undefined;
  const stopping = () => stopped;
  const failures = recurringFailureLog(failure.log, "error", failure.event);
  const timer = setInterval(() => {
    run ??= work(stopping)
      .then(() => failures.succeeded())
      .catch((error: unknown) => failures.failed({ error }))
      .finally(() => (run = undefined));
  }, intervalMs);
  return {
    name,
    async stop() {
      stopped = true;
      clearInterval(timer);
      const { stopWaitMs } = options;
      await (stopWaitMs === undefined ? run : Promise.race([run, new Promise((resolve) => setTimeout(resolve, stopWaitMs()).unref())]));
    },
  };
}
