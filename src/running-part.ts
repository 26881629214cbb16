/**
 * One part `inboxd serve` starts and stops (src/serve.ts): a listener, a queue, a background job.
 * A leaf module, so that the parts need not import serve.ts, which imports them all.
 */
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
