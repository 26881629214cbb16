/**
 * Where a worker thread's entry point is, from its path below src/ ("smtp/analysis-worker.ts").
 * In the single executable every module sits at the root of its file system (in the executable's
 * own entry, or in a chunk beside it: the build splits), and each worker, an extra entry point of
 * `bun build --compile` (the `build` script of package.json lists them all), sits at its path
 * below src/; from source, it is that path beside this folder.
 */
export function workerUrl(pathBelowSrc: string): URL {
  return import.meta.path.startsWith("/$bunfs/") ? new URL(`./${pathBelowSrc}`, import.meta.url) : new URL(`../${pathBelowSrc}`, import.meta.url);
}
