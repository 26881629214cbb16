/**
 * Pools of worker threads that answer requests (./serve is the threads' side): the analysis of
 * received mail, DKIM signing, WAL checkpoints. A request goes to the least busy thread, and every
 * pool treats a thread that stops the same way:
 * - one that stops once it was ready (an error it did not catch, a crash) fails the requests it
 *   had in flight and is replaced by a new one;
 * - one that stops before it was ever ready could not load: it is dropped, not replaced (a new one
 *   would fail alike), and its requests, which never ran, run on this thread instead, as every
 *   request does once no thread is left, or when none was asked for;
 * - a request past its deadline has its thread replaced: the one way to stop work running on it.
 * A pool on demand (startOnDemandPool) runs no thread while it has no request.
 */
import type { Logger } from "../log";
import { roomForAThread } from "./descriptors";

/** What the two sides of a pool say: the setup each new thread gets first, then requests and their replies. */
export interface WorkerProtocol {
  setup: unknown;
  request: unknown;
  reply: unknown;
}

export type ToThread<P extends WorkerProtocol> = { setup: P["setup"] } | { id: number; request: P["request"] };
/** An error crosses as its name and message: its class stays behind. */
export type FromThread<P extends WorkerProtocol> = { ready: true } | { id: number; reply: P["reply"] } | { id: number; error: { name: string; message: string } };

export interface WorkerPoolOptions<P extends WorkerProtocol, Notes> {
  /** What log lines and errors call the workers: "smtp analysis" makes "smtp analysis worker stopped". */
  name: string;
  /** The threads' entry point (./url). */
  url: URL;
  threads: number;
  setup: P["setup"];
  /** The owner's notes on the worker a thread runs (what it was sent already), made anew for each new worker. */
  notes?: () => Notes;
  log: Logger;
}

/**
 * A request lost with its thread, replaced for another request's deadline: not its doing. (A
 * thread that stops by itself fails its requests with a plain Error: any of them may have made it.)
 */
export class WorkerReplacedError extends Error {
  override readonly name = "WorkerReplacedError";
}

/** Counted from when the thread is ready: past it the request fails with `error()`, and its thread is replaced. */
export type Deadline = { ms: number; error: () => Error };

export interface PoolRequest<P extends WorkerProtocol, Notes> {
  /** The request for the thread it goes to, given the owner's notes on that thread's worker. */
  message: (notes: Notes) => P["request"];
  /** The same work on this thread, for when no thread can take it. */
  here: () => Promise<P["reply"]>;
  /** ArrayBuffers that move to the thread instead of being copied, once it has shown that it loads (until then `here` may yet need them). */
  transfer?: ArrayBuffer[];
  deadline?: Deadline;
}

export interface WorkerPool<P extends WorkerProtocol, Notes = undefined> {
  /** The reply of a thread, or what `here` gave; rejects with the error the thread's handler threw (its name kept), or when the thread stopped. */
  run(request: PoolRequest<P, Notes>): Promise<P["reply"]>;
  /** Ends the threads: what they had in flight fails, and requests from now on run on this thread. */
  close(): void;
}

export function startWorkerPool<P extends WorkerProtocol, Notes = undefined>(options: WorkerPoolOptions<P, Notes>): WorkerPool<P, Notes> {
  const threads: PoolThread<P, Notes>[] = [];
  const drop = (thread: PoolThread<P, Notes>, reason: string) => {
    threads.splice(threads.indexOf(thread), 1);
    const message = threads.length ? `one ${options.name} worker could not start; the others do its work` : `${options.name} workers cannot start; the main thread does their work`;
    options.log.error(message, { reason });
  };
  if (options.threads > 0 && !roomForAThread()) options.log.warn(`${options.name} workers not started: the process is near its limit of open files; the main thread does their work`);
  else for (let i = 0; i < options.threads; i++) threads.push(new PoolThread(options, drop));
  return {
    run(request) {
      if (threads.length === 0) return request.here();
      // The least busy thread: requests differ in cost (size, DNS waits).
      return threads.reduce((best, thread) => (thread.pending < best.pending ? thread : best)).run(request);
    },
    close() {
      const closed = new Error(`the ${options.name} workers were closed`);
      for (const thread of threads.splice(0)) thread.end(closed);
    },
  };
}

export interface OnDemandPool<P extends WorkerProtocol, Notes = undefined> extends WorkerPool<P, Notes> {
  /** Whether its threads run now: they start with a request and end once idle. */
  threadsRunning(): boolean;
}

/**
 * A pool whose threads start with its first request and end once none came for `idleMs`, to start
 * again with the next: each thread holds a heap of its own (an analysis thread about 23 MB), which
 * a server at rest gives back. Closed, it ends its threads, and requests from then on start them again.
 */
export function startOnDemandPool<P extends WorkerProtocol, Notes = undefined>(options: WorkerPoolOptions<P, Notes> & { idleMs: number }): OnDemandPool<P, Notes> {
  let pool: WorkerPool<P, Notes> | undefined;
  let pending = 0;
  let idleTimer: Timer | undefined;
  const end = () => {
    clearTimeout(idleTimer);
    pool?.close();
    pool = undefined;
  };
  return {
    run(request) {
      clearTimeout(idleTimer);
      pending++;
      pool ??= startWorkerPool(options);
      return pool.run(request).finally(() => {
        if (--pending === 0) idleTimer = setTimeout(end, options.idleMs).unref();
      });
    },
    threadsRunning: () => pool !== undefined,
    close: end,
  };
}

type InFlight<P extends WorkerProtocol> = {
  resolve: (reply: P["reply"]) => void;
  reject: (error: Error) => void;
  here: () => Promise<P["reply"]>;
  deadline?: Deadline;
  timer?: Timer;
};

/** One thread of a pool, and the worker it runs now. */
class PoolThread<P extends WorkerProtocol, Notes> {
  private worker!: Worker;
  private notes!: Notes;
  private ready = false;
  /** Why the worker stopped, as its error event said. */
  private failure?: string;
  private ended = false;
  private readonly inFlight = new Map<number, InFlight<P>>();
  private nextId = 1;

  constructor(
    private readonly options: WorkerPoolOptions<P, Notes>,
    private readonly drop: (thread: PoolThread<P, Notes>, reason: string) => void,
  ) {
    this.start();
  }

  get pending(): number {
    return this.inFlight.size;
  }

  run(request: PoolRequest<P, Notes>): Promise<P["reply"]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const job: InFlight<P> = { resolve, reject, here: request.here, deadline: request.deadline };
      this.inFlight.set(id, job);
      // A worker still loading its modules is not the request's fault: its clock starts once the worker is ready.
      if (this.ready) this.startDeadline(id, job);
      this.worker.postMessage({ id, request: request.message(this.notes) } satisfies ToThread<P>, this.ready ? (request.transfer ?? []) : []);
    });
  }

  /** Ends the worker for good; what it had in flight fails with `error`. */
  end(error: Error): void {
    this.ended = true;
    this.worker.terminate();
    for (const job of this.takeInFlight()) job.reject(error);
  }

  private start(): void {
    const worker = new Worker(this.options.url);
    this.worker = worker;
    this.notes = this.options.notes?.() as Notes;
    this.ready = false;
    this.failure = undefined;
    // A pool never keeps the process alive by itself: its owner's listeners and timers do.
    worker.unref();
    // A replaced worker is not heard any more: its requests have failed already.
    worker.onmessage = ({ data: message }: MessageEvent<FromThread<P>>) => worker === this.worker && this.settle(message);
    // An error the worker did not catch leaves it in no known state: it ends, and its close replaces it.
    worker.onerror = (event) => {
      if (worker !== this.worker) return;
      this.failure = event.message;
      worker.terminate();
    };
    worker.addEventListener("close", () => worker === this.worker && this.stopped());
    worker.postMessage({ setup: this.options.setup } satisfies ToThread<P>);
  }

  private stopped(): void {
    if (this.ended) return;
    const reason = this.failure ?? "it exited";
    const jobs = this.takeInFlight();
    if (!this.ready) {
      this.ended = true;
      this.drop(this, reason);
      for (const job of jobs) job.here().then(job.resolve, job.reject);
      return;
    }
    const lost = new Error(`the ${this.options.name} worker stopped: ${reason}`);
    for (const job of jobs) job.reject(lost);
    if (!roomForAThread()) {
      this.ended = true;
      this.drop(this, `${reason}; not replaced: the process is near its limit of open files`);
      return;
    }
    this.options.log.error(`${this.options.name} worker stopped; starting a new one`, { reason });
    this.start();
  }

  private overDeadline(id: number, deadline: Deadline): void {
    const job = this.inFlight.get(id)!;
    this.options.log.warn(`${this.options.name} over its deadline; replacing its worker`, { timeoutMs: deadline.ms, others: this.inFlight.size - 1 });
    const old = this.worker;
    const jobs = this.takeInFlight();
    if (roomForAThread()) this.start();
    else {
      this.ended = true;
      this.drop(this, "ended for a request past its deadline; not replaced: the process is near its limit of open files");
    }
    old.terminate();
    job.reject(deadline.error());
    const replaced = new WorkerReplacedError(`the ${this.options.name} worker was replaced`);
    for (const other of jobs) if (other !== job) other.reject(replaced);
  }

  private startDeadline(id: number, job: InFlight<P>): void {
    const { deadline } = job;
    if (deadline) job.timer = setTimeout(() => this.overDeadline(id, deadline), deadline.ms);
  }

  private takeInFlight(): InFlight<P>[] {
    const jobs = [...this.inFlight.values()];
    for (const job of jobs) clearTimeout(job.timer);
    this.inFlight.clear();
    return jobs;
  }

  private settle(message: FromThread<P>): void {
    if ("ready" in message) {
      this.ready = true;
      for (const [id, job] of this.inFlight) this.startDeadline(id, job);
      return;
    }
    const job = this.inFlight.get(message.id)!;
    this.inFlight.delete(message.id);
    clearTimeout(job.timer);
    if ("reply" in message) job.resolve(message.reply);
    else job.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
  }
}
