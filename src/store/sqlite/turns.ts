/**
 * Turns on the one connection. A transaction may await between its statements, and anything run
 * on the connection meanwhile would become part of it: so a transaction holds the connection from
 * BEGIN to COMMIT, and calls made meanwhile wait their turn, in order. A call made while the
 * connection is free runs at once, in the caller's turn of the event loop, as a plain bun:sqlite
 * call would.
 */
export class ConnectionTurns {
  private held = false;
  private readonly waiting: (() => void)[] = [];

  /** One call's statements, with nothing else in between (they are synchronous). */
  call<T>(statements: () => T): Promise<T> {
    if (!this.held) return settle(statements);
    return new Promise<T>((resolve, reject) => this.waiting.push(() => settle(statements).then(resolve, reject)));
  }

  /** `work` alone on the connection until its promise settles (a transaction). */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const start = () => {
      this.held = true;
      return settle(work)
        .then((promise) => promise)
        .finally(() => this.release());
    };
    if (!this.held) return start();
    return new Promise<T>((resolve, reject) => this.waiting.push(() => void start().then(resolve, reject)));
  }

  private release() {
    this.held = false;
    // A waiting call runs at once; a waiting transaction takes the connection and stops the round.
    while (!this.held && this.waiting.length > 0) this.waiting.shift()!();
  }
}

function settle<T>(run: () => T): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error);
  }
}
