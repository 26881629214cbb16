/** Counts per key (a URL, a domain): what the queues' limits per destination are checked against. */
export class Counts {
  constructor(private readonly counts = new Map<string, number>()) {}
  copy(): Counts {
    return new Counts(new Map(this.counts));
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  increment(key: string) {
    this.counts.set(key, this.get(key) + 1);
  }
  decrement(key: string) {
    const count = this.get(key) - 1;
    if (count > 0) this.counts.set(key, count);
    else this.counts.delete(key);
  }
  /** The keys whose count has reached their limit. */
  atLimit(limitOf: (key: string) => number): string[] {
    return [...this.counts].filter(([key, count]) => count >= limitOf(key)).map(([key]) => key);
  }
  /** How far each key's count exceeds its limit, for those that do. */
  excess(limitOf: (key: string) => number): Map<string, number> {
    const over = new Map<string, number>();
    for (const [key, count] of this.counts) if (count > limitOf(key)) over.set(key, count - limitOf(key));
    return over;
  }
}
