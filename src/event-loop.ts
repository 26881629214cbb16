/** Splitting long work on the event loop, so that requests and SMTP sessions run in between. */

const waiting: (() => void)[] = [];
let turning = false;

/**
 * Resolves when it is this caller's turn: one caller per turn of the event loop, in the order they
 * asked, for work that comes in many slices (search walks, large values written in chunks). Were
 * each to yield on its own, one turn would run a slice of every such work under way before the
 * loop polled for I/O again; taking turns, what they add to any request's wait is one slice.
 */
export function takeTurn(): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  waiting.push(resolve);
  if (!turning) {
    turning = true;
    setImmediate(giveTurn);
  }
  return promise;
}

// The slice runs in the microtasks after this callback; the next one waits for the next check phase, after I/O.
function giveTurn() {
  const resolve = waiting.shift();
  if (!resolve) {
    turning = false;
    return;
  }
  resolve();
  setImmediate(giveTurn);
}
