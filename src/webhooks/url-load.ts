/** How far the webhook queue's claims for a URL may run ahead of its sending slots. */

/** URLs whose claim depth is remembered; beyond it the memory starts again (every URL at its least). */
const rememberedUrls = 10_000;

/**
 * Claims run ahead of the sending slots, `ahead` rounds of them, so that one commit serves many
 * tries and a free slot never waits for a commit; but only for a URL that answers promptly. A URL
 * not tried yet, whose last try took `promptMs` or longer, or with a try in flight for that long,
 * gets no more claims than its sending slots: a receiver that is slow or stops answering holds no
 * more tries recorded before they go out than it has requests in flight.
 */
export class ClaimDepth {
  private readonly prompt = new Set<string>();
  constructor(
    private readonly sendingPerUrl: number,
    private readonly ahead: number,
    private readonly promptMs: number,
  ) {}
  limit(url: string): number {
    return this.prompt.has(url) ? this.sendingPerUrl * this.ahead : this.sendingPerUrl;
  }
  /** A try to `url` came back (answered or failed) after `tookMs`. */
  finished(url: string, tookMs: number) {
    if (tookMs >= this.promptMs) this.prompt.delete(url);
    else if (!this.prompt.has(url)) {
      if (this.prompt.size >= rememberedUrls) this.prompt.clear();
      this.prompt.add(url);
    }
  }
  /** A try to `url` has been in flight for `forMs`. */
  inFlight(url: string, forMs: number) {
    if (forMs >= this.promptMs) this.prompt.delete(url);
  }
}
