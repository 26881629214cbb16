/**
 * Counts per key (a URL, a domain, an organization, a client): what the limits of a shared
 * resource per destination or per tenant are checked against. A key whose count falls to 0 is
 * dropped, so the map holds only what is held now.
 */
export class Counts {
  constructor(private readonly counts = new Map<string, number>()) {}
  copy(): Counts {
    return new Counts(new Map(this.counts));
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  /** `amount` more (or less, when negative): one per holder, or bytes. */
  add(key: string, amount: number) {
    const count = this.get(key) + amount;
    if (count > 0) this.counts.set(key, count);
    else this.counts.delete(key);
  }
  increment(key: string) {
    this.add(key, 1);
  }
  decrement(key: string) {
    this.add(key, -1);
  }
  /** All the counts together. */
  total(): number {
    let total = 0;
    for (const count of this.counts.values()) total += count;
    return total;
  }
  /** `key` for a count of one, `keyxN` for more, in the order the keys came: `554x3,550`. */
  describe(): string {
    return [...this.counts].map(([key, count]) => (count === 1 ? key : `${key}x${count}`)).join(",");
  }
  /** The largest count, 0 when none. */
  most(): number {
    let most = 0;
    for (const count of this.counts.values()) most = Math.max(most, count);
    return most;
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
