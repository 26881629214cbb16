/** Resolves in a later turn of the event loop, after the I/O waiting now: long work split by it lets requests and sessions in between. */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
