// How long and how hard the fuzz targets in this folder run, and the bounds each call is held to.
//
// CI (no variables set): every property runs for at most DEFAULT_SECONDS or its own run count,
// whichever ends first, from a fixed seed, so that the whole folder stays well under a minute
// and a failure reproduces. A release run sets INBOXD_FUZZ_SECONDS (e.g. 120) and lets each
// property run that long with no cap on runs; INBOXD_FUZZ_RUNS caps runs instead (or as well),
// INBOXD_FUZZ_SEED picks another seed. fast-check prints the seed and path of any counterexample.
import fc from "fast-check";

const DEFAULT_SEED = 20_260_512;
const DEFAULT_SECONDS = 0.6;

function numberFrom(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text.trim() === "") return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not '${text}'`);
  return value;
}

const seconds = numberFrom("INBOXD_FUZZ_SECONDS");
const runs = numberFrom("INBOXD_FUZZ_RUNS");
export const seed = numberFrom("INBOXD_FUZZ_SEED") ?? DEFAULT_SEED;
/** A release run: a time limit was asked for, or a run count above CI's. */
export const isLongRun = seconds !== undefined || runs !== undefined;
const secondsPerProperty = seconds ?? (runs !== undefined ? Infinity : DEFAULT_SECONDS);

/**
 * Ceiling on one call of a parser on one input of up to 1 MiB. The limits in src/mail/limits.ts
 * aim at a few hundred milliseconds for the worst message; this leaves room for a loaded CI
 * machine (2 shared cores) and a garbage collection, while a quadratic path or a hang on
 * MiB-sized input still fails.
 */
export const CALL_CEILING_MS = 2_000;

/** bun's test timeout for a test running `properties` properties: their time limit plus slack. */
export function testTimeout(properties = 1): number {
  const limit = Number.isFinite(secondsPerProperty) ? secondsPerProperty * 1000 : 60 * 60 * 1000;
  return properties * (limit + 20_000);
}

/**
 * Runs one property from the fixed seed; `ciRuns` caps the runs in CI mode (a release run without
 * INBOXD_FUZZ_RUNS is capped by time only), `minRuns` is what the time limit may not cut it below.
 * Logs the figures, throws fast-check's report on failure.
 */
export async function fuzz<Ts>(name: string, property: fc.IRawProperty<Ts>, { ciRuns = 10_000, minRuns = 1 } = {}): Promise<fc.RunDetails<Ts>> {
  const numRuns = runs ?? (isLongRun ? 2 ** 31 - 1 : ciRuns);
  const plugins = Number.isFinite(secondsPerProperty) ? [fc.interruptAfterTimeLimit(secondsPerProperty * 1000)] : [];
  const started = performance.now();
  let details = (await fc.check(property, { seed, numRuns, plugins })) as fc.RunDetails<Ts>;
  // A loaded machine can spend the whole time limit on the first few inputs of a costly property
  // (fast-check then stops it, "interrupted after 0 tests"): it still runs its least number of
  // times, however long that takes; the per-call ceilings hold each call.
  if (details.interrupted && details.numRuns < minRuns) details = (await fc.check(property, { seed, numRuns: minRuns })) as fc.RunDetails<Ts>;
  const elapsed = (performance.now() - started) / 1000;
  console.error(`fuzz ${name}: ${details.numRuns} runs in ${elapsed.toFixed(1)} s (seed ${seed})${details.failed ? " FAILED" : ""}`);
  if (details.failed) {
    const error = details.errorInstance;
    const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new Error(`${fc.defaultReportMessage(details) ?? `${name} failed`}\n\nGot ${why}`, { cause: error });
  }
  return details;
}

/** Calls `f` and fails when it took longer than `ceilingMs`; hangs are left to the test timeout. */
export async function withinTime<T>(what: string, f: () => T | Promise<T>, ceilingMs = CALL_CEILING_MS): Promise<T> {
  const started = performance.now();
  const result = await f();
  const elapsed = performance.now() - started;
  if (elapsed > ceilingMs) throw new Error(`${what} took ${elapsed.toFixed(0)} ms, over the ${ceilingMs} ms ceiling`);
  return result;
}

/**
 * Heap bytes still held after `f` resolved, with its result kept alive: what one call of a parser
 * costs in memory beyond the transient garbage. Compared with the input size by the callers.
 */
export async function retainedBytes<T>(f: () => Promise<T>): Promise<{ result: T; bytes: number }> {
  Bun.gc(true);
  const before = process.memoryUsage().heapUsed;
  const result = await f();
  Bun.gc(true);
  const bytes = process.memoryUsage().heapUsed - before;
  return { result, bytes };
}

/** An outcome that is either a value or the error it rejected with: the error's type is what is checked. */
export async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}
