// Runs the analysis of received messages (parsing and authentication, ./analyze) on worker
// threads, so that the event loop keeps serving SMTP sessions and committing while other cores
// parse. With no workers configured, or where they cannot start, it runs on the main thread.
// Each analysis has a deadline: past it the analysis fails (the inbound queue tries again later;
// before the 250, the message is refused with 451) and, on a worker, the thread is replaced, so
// that no one message can hold a thread however it was crafted. The bytes of a message move to the
// worker and back without copies (transferred ArrayBuffers). The threads start with the first
// analysis and stop after a minute without one: each holds a heap of its own (about 23 MB), which
// a server that receives no mail for a while gives back.
import type { Logger } from "../log";
import { startOnDemandPool } from "../workers/pool";
import { transferable } from "../workers/transfer";
import { workerUrl } from "../workers/url";
import type { Analysis, AnalysisSettings } from "./analyze";
import { analysisSettings, revivedAnalysis, type AnalysisProtocol } from "./analysis-protocol";
import type { SmtpIdentity } from "./authenticate";
import { dnsBudgetOf } from "./dns-budget";

export interface AnalysisPool {
  /** Rejects with an Error named like the one the analysis threw (e.g. MessageLimitError). */
  analyze(raw: Buffer, identity: SmtpIdentity): Promise<Analysis>;
  /** Whether its threads run now: they start with the first analysis and stop once idle. */
  threadsRunning(): boolean;
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
  /** How long the threads stay without an analysis before they stop; a minute unless given (tests). */
  idleThreadsMs?: number;
}

/** How long the threads stay without an analysis before they stop (the next one starts them again). */
const IDLE_THREADS_MS = 60_000;

/** An analysis that did not end by its deadline. */
export class AnalysisTimeoutError extends Error {
  override readonly name = "AnalysisTimeoutError";
}

/**
 * A thread that stops fails the analyses it had (the sessions answer 451) and is replaced; one
 * that cannot load leaves its analyses, and the next ones, to the main thread (../workers/pool).
 */
export function createAnalysisPool(options: AnalysisPoolOptions): AnalysisPool {
  const setup = { authservId: options.authservId, dnsServers: options.dnsServers, dnsBudget: dnsBudgetOf(options.timeoutMs) };
  let settings: AnalysisSettings | undefined;
  const analyzeHere = (raw: Buffer, identity: SmtpIdentity) => {
    settings ??= analysisSettings(setup);
    // On the main thread nothing can stop the work itself; the deadline still frees the session.
    return new Promise<Analysis>((resolve, reject) => {
      const timer = setTimeout(() => reject(overDeadline(options.timeoutMs)), options.timeoutMs);
      // The parser and mailauth load on this thread only for an analysis that runs here (no thread
      // configured, or none could start): about 10 MB that the server's main thread does not hold.
      import("./analyze")
        .then(({ analyzeMessage }) => analyzeMessage(raw, identity, settings!))
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
  };
  const threads = startOnDemandPool<AnalysisProtocol>({ name: "smtp analysis", url: workerUrl("smtp/analysis-worker.ts"), threads: options.workers, setup, log: options.log, idleMs: options.idleThreadsMs ?? IDLE_THREADS_MS });
  const deadline = { ms: options.timeoutMs, error: () => overDeadline(options.timeoutMs) };
  return {
    analyze: (raw, identity) => threads.run({ message: () => ({ raw, identity }), here: () => analyzeHere(raw, identity), transfer: transferable([raw]), deadline }).then(revivedAnalysis),
    threadsRunning: () => threads.threadsRunning(),
    close: () => threads.close(),
  };
}

const overDeadline = (timeoutMs: number) => new AnalysisTimeoutError(`its analysis took longer than ${timeoutMs} ms`);
