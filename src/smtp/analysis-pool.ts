// Runs the analysis of received messages (parsing and authentication, ./analyze) on worker
// threads, so that the event loop keeps serving SMTP sessions and committing while other cores
// parse. With no workers configured, or where they cannot start, it runs on the main thread.
// Each analysis has a deadline: past it the message is refused (451) and, on a worker, the thread
// is replaced, so that no one message can hold a thread however it was crafted. The bytes of a
// message move to the worker and back without copies (transferred ArrayBuffers).
import type { Logger } from "../log";
import { startWorkerPool } from "../workers/pool";
import { transferable } from "../workers/transfer";
import { workerUrl } from "../workers/url";
import { analyzeMessage, type Analysis, type AnalysisSettings } from "./analyze";
import { analysisSettings, revivedAnalysis, type AnalysisProtocol } from "./analysis-protocol";
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

/**
 * A thread that stops fails the analyses it had (the sessions answer 451) and is replaced; one
 * that cannot load leaves its analyses, and the next ones, to the main thread (../workers/pool).
 */
export function createAnalysisPool(options: AnalysisPoolOptions): AnalysisPool {
  const setup = { authservId: options.authservId, dnsServers: options.dnsServers };
  let settings: AnalysisSettings | undefined;
  const analyzeHere = (raw: Buffer, identity: SmtpIdentity) => {
    settings ??= analysisSettings(setup);
    // On the main thread nothing can stop the work itself; the deadline still frees the session.
    return new Promise<Analysis>((resolve, reject) => {
      const timer = setTimeout(() => reject(overDeadline(options.timeoutMs)), options.timeoutMs);
      analyzeMessage(raw, identity, settings!)
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
  };
  const threads = startWorkerPool<AnalysisProtocol>({ name: "smtp analysis", url: workerUrl("smtp/analysis-worker.ts"), threads: options.workers, setup, log: options.log });
  const deadline = { ms: options.timeoutMs, error: () => overDeadline(options.timeoutMs) };
  return {
    analyze(raw, identity) {
      const analysis = threads.run({ message: () => ({ raw, identity }), here: () => analyzeHere(raw, identity), transfer: transferable([raw]), deadline });
      return analysis.then(revivedAnalysis);
    },
    close: () => threads.close(),
  };
}

const overDeadline = (timeoutMs: number) => new AnalysisTimeoutError(`its analysis took longer than ${timeoutMs} ms`);
