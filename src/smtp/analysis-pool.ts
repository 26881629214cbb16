// Runs the analysis of received messages (parsing and authentication, ./analyze) on worker
// threads, so that the event loop keeps serving SMTP sessions and committing while other cores
// parse. With no workers configured, or where they cannot start, it runs on the main thread.
import type { Logger } from "../log";
import { analyzeMessage, type Analysis, type AnalysisSettings } from "./analyze";
import { analysisResolver, revivedAnalysis, type WorkerReply, type WorkerRequest } from "./analysis-protocol";
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
  log: Logger;
}

// In the single executable every module has the executable's URL, and the worker, a second
// entry point of `bun build --compile` (package.json), sits at its path below src/.
const workerUrl = import.meta.path.startsWith("/$bunfs/") ? new URL("./smtp/analysis-worker.ts", import.meta.url) : new URL("./analysis-worker.ts", import.meta.url);

export function createAnalysisPool(options: AnalysisPoolOptions): AnalysisPool {
  let settings: AnalysisSettings | undefined;
  const analyzeHere = (raw: Buffer, identity: SmtpIdentity) => {
    settings ??= { authservId: options.authservId, resolver: analysisResolver(options.dnsServers) };
    return analyzeMessage(raw, identity, settings);
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

type Job = { raw: Buffer; identity: SmtpIdentity; resolve: (analysis: Analysis) => void; reject: (error: Error) => void };
type Analyze = (raw: Buffer, identity: SmtpIdentity) => Promise<Analysis>;

/**
 * One worker thread. If it exits once it was ready, its pending analyses fail (the sessions
 * answer 451) and a new one starts; if it exits before it was ever ready (it could not load), the
 * pool gives up on it and its pending analyses run on the main thread instead.
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
      this.pending.set(id, { raw, identity, resolve, reject });
      this.post({ type: "analyze", id, raw, identity });
    });
  }

  close(): void {
    this.closed = true;
    this.worker.terminate();
  }

  private start(): void {
    this.worker = new Worker(workerUrl);
    // The workers never keep the process alive by themselves: the SMTP listener does.
    this.worker.unref();
    this.worker.onmessage = ({ data: reply }: MessageEvent<WorkerReply>) => this.settle(reply);
    this.worker.onerror = (event) => this.options.log.error("smtp analysis worker error", { error: event.message });
    this.worker.addEventListener("close", () => this.exited());
    this.post({ type: "init", authservId: this.options.authservId, dnsServers: this.options.dnsServers });
  }

  private exited(): void {
    if (this.closed) return;
    const jobs = [...this.pending.values()];
    this.pending.clear();
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

  private post(request: WorkerRequest): void {
    this.worker.postMessage(request);
  }

  private settle(reply: WorkerReply): void {
    if ("ready" in reply) {
      this.ready = true;
      return;
    }
    const job = this.pending.get(reply.id);
    if (!job) return;
    this.pending.delete(reply.id);
    if ("analysis" in reply) job.resolve(revivedAnalysis(reply.analysis));
    else job.reject(Object.assign(new Error(reply.error.message), { name: reply.error.name }));
  }
}
