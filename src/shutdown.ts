/**
 * The one wait for in-flight work once the server stops (INBOXD_SHUTDOWN_TIMEOUT_MS), shared by
 * the parts as they stop (src/serve.ts stopParts). Each waited a whole timeout of its own, one
 * after another: three slow ones took 29.4 s of the packaged unit's 30 (TimeoutStopSec), past
 * which systemd kills. A part stopped after the deadline waits for nothing more.
 */
export class ShutdownDeadline {
  private deadline: number | undefined;

  constructor(private readonly timeoutMs: number) {}

  /** The stop begins: the time runs from here (a second call keeps the first deadline). */
  begin(): void {
    this.deadline ??= performance.now() + this.timeoutMs;
  }

  /** What a part stopping now may still wait; the whole timeout for a part stopped on its own. */
  remainingMs(): number {
    return this.deadline === undefined ? this.timeoutMs : Math.max(0, this.deadline - performance.now());
  }
}
