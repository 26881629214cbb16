/** The one clock every timer, queue and expiry reads, so tests can move time instead of sleeping. */
export class Clock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
  date(): Date {
    return new Date(this.now());
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/** Resources keep milliseconds; the API and the webhooks show ISO 8601. */
export const iso = (ms: number) => new Date(ms).toISOString();
