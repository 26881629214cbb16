// Runs the analysis of received messages (parsing and authentication, ./analyze) on worker
// threads, so that the event loop keeps serving SMTP sessions and committing while other cores
// parse. With no workers configured, or where they cannot start, it runs on the main thread.
// Each analysis has a deadline: past it the message is refused (451) and, on a worker, the thread
// is replaced, so that no one message can hold a thread however it was crafted. The bytes of a
// message move to the worker and back without copies (transferred ArrayBuffers).
import type { Logger } from "../log";
import { analyzeMessage, type Analysis, type AnalysisSettings } from "./analyze";
import { analysisResolver, revivedAnalysis, transferable, type WorkerReply, type WorkerRequest } from "./analysis-protocol";
import type { SmtpIdentity } from "./authenticate";

export interface AnalysisPool {
  /** Rejects with an Error named like the one the analysis threw (e.g. MessageLimitError). */
  analyze(raw: Buffer, identity: SmtpIdentity): Promise<Analysis>;
  /** Stops the workers; call once no analysis is pending. */
  close(): void;
}

export interface AnalysisPoolOptions {
  workers: number;
  authservId: string;
  dnsServers: string[];
  /** INBOXD_SMTP_ANALYSIS_TIMEOUT_MS */
  timeoutMs: number;
  log: Logger;
}

/** An analysis that did not end by its deadline. */
export class AnalysisTimeoutError extends Error {
  override readonly name = "AnalysisTimeoutError";
}

// In the single executable every module has the executable's URL, and the worker, a second
// entry point of `bun build --compile` (package.json), sits at its path below src/.
const workerUrl = import.meta.path.startsWith("/$bunfs/") ? new URL("./smtp/analysis-worker.ts", import.meta.url) : new URL("./analysis-worker.ts", import.meta.url);

export function createAnalysisPool(options: AnalysisPoolOptions): AnalysisPool {
  let settings: AnalysisSettings | undefined;
  const analyzeHere = (raw: Buffer, identity: SmtpIdentity) => {
    settings ??= { authservId: options.authservId, resolver: analysisResolver(options.dnsServers) };
    // On the main thread nothing can stop the work itself; the deadline still frees the session.
    return new Promise<Analysis>((resolve, reject) => {
      const timer = setTimeout(() => reject(overDeadline(options.timeoutMs)), options.timeoutMs);
      analyzeMessage(raw, identity, settings!)
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
  };
  const workers: AnalysisWorker[] = [];
  const unusable = (worker: AnalysisWorker) => {
    workers.splice(workers.indexOf(worker), 1);
    if (workers.length === 0) options.log.error("smtp analysis workers cannot start; analysing received mail on the main thread");
  };
  for (let i = 0; i < options.workers; i++) workers.push(new AnalysisWorker(options, analyzeHere, unusable));
  return {
    analyze(raw, identity) {
      if (workers.length === 0) return analyzeHere(raw, identity);
      // The least busy worker: analyses differ in cost (size, DNS waits).
      const worker = workers.reduce((best, candidate) => (candidate.pendingCount < best.pendingCount ? candidate : best));
      return worker.analyze(raw, identity);
    },
    close() {
      for (const worker of [...workers]) worker.close();
    },
  };
}

const overDeadline = (timeoutMs: number) => new AnalysisTimeoutError(`its analysis took longer than ${timeoutMs} ms`);

type Job = { raw: Buffer; identity: SmtpIdentity; resolve: (analysis: Analysis) => void; reject: (error: Error) => void; deadline?: Timer };
type Analyze = (raw: Buffer, identity: SmtpIdentity) => Promise<Analysis>;

/**
 * One worker thread. If it exits once it was ready, or an analysis on it passes its deadline, its
 * pending analyses fail (the sessions answer 451) and a new one starts; if it exits before it was
 * ever ready (it could not load), the pool gives up on it and its pending analyses run on the main
 * thread instead.
 */
class AnalysisWorker {
  private worker!: Worker;
  private readonly pending = new Map<number, Job>();
  private nextId = 1;
  private closed = false;
  private ready = false;

  constructor(
    private readonly options: AnalysisPoolOptions,
    private readonly analyzeHere: Analyze,
    private readonly onUnusable: (worker: AnalysisWorker) => void,
  ) {
    this.start();
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  analyze(raw: Buffer, identity: SmtpIdentity): Promise<Analysis> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const job: Job = { raw, identity, resolve, reject };
      this.pending.set(id, job);
      // A thread still loading its modules is not the message's fault: its clock starts once the thread is ready.
      if (this.ready) this.startDeadline(id, job);
      // Until the thread has shown that it loads, the bytes are copied: the main thread may yet need them.
      this.post({ type: "analyze", id, raw, identity }, this.ready ? transferable([raw]) : []);
    });
  }

  close(): void {
    this.closed = true;
    this.worker.terminate();
  }

  private start(): void {
    const worker = new Worker(workerUrl);
    this.worker = worker;
    this.ready = false;
    // The workers never keep the process alive by themselves: the SMTP listener does.
    worker.unref();
    worker.onmessage = ({ data: reply }: MessageEvent<WorkerReply>) => this.settle(reply);
    worker.onerror = (event) => this.options.log.error("smtp analysis worker error", { error: event.message });
    // A replaced thread's exit is old news.
    worker.addEventListener("close", () => worker === this.worker && this.exited());
    this.post({ type: "init", authservId: this.options.authservId, dnsServers: this.options.dnsServers });
  }

  private exited(): void {
    if (this.closed) return;
    const jobs = this.takePending();
    if (!this.ready) {
      this.closed = true;
      this.onUnusable(this);
      for (const job of jobs) this.analyzeHere(job.raw, job.identity).then(job.resolve, job.reject);
      return;
    }
    const lost = new Error("the analysis worker stopped");
    for (const job of jobs) job.reject(lost);
    this.options.log.error("smtp analysis worker stopped; starting a new one");
    this.start();
  }

  /** The one way to stop work already running on the thread is to end the thread. */
  private overDeadline(id: number): void {
    const job = this.pending.get(id);
    if (!job || this.closed) return;
    this.options.log.warn("smtp analysis over its deadline; replacing its thread", { timeoutMs: this.options.timeoutMs, others: this.pending.size - 1 });
    const old = this.worker;
    const jobs = this.takePending();
    this.start();
    old.terminate();
    job.reject(overDeadline(this.options.timeoutMs));
    const replaced = new Error("the analysis thread was replaced");
    for (const other of jobs) if (other !== job) other.reject(replaced);
  }

  private startDeadline(id: number, job: Job): void {
    job.deadline = setTimeout(() => this.overDeadline(id), this.options.timeoutMs);
  }

  private takePending(): Job[] {
    const jobs = [...this.pending.values()];
    for (const job of jobs) clearTimeout(job.deadline);
    this.pending.clear();
    return jobs;
  }

  private post(request: WorkerRequest, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(request, transfer);
  }

  private settle(reply: WorkerReply): void {
    if ("ready" in reply) {
      this.ready = true;
      for (const [id, job] of this.pending) this.startDeadline(id, job);
      return;
    }
    const job = this.pending.get(reply.id);
    if (!job) return;
    this.pending.delete(reply.id);
    clearTimeout(job.deadline);
    if ("analysis" in reply) job.resolve(revivedAnalysis(reply.analysis));
    else job.reject(Object.assign(new Error(reply.error.message), { name: reply.error.name }));
  }
}
