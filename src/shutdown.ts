/**
 * The one wait for in-flight work once the server stops (INBOXD_SHUTDOWN_TIMEOUT_MS). The parts stop
 * one after another, and each waited a whole timeout of its own: three slow ones took 29.4 s of
 * the packaged unit's 30 (TimeoutStopSec), past which systemd kills. Each now waits what is left.
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
