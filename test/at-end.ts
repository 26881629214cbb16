/**
 * Work for when the run ends: temp dirs to remove, test databases to drop. `bun test` fires no
 * `exit` event, so test/preload.ts runs these after all tests; a bench or a peer run as a script
 * runs them at its exit.
 */
const tasks: (() => void)[] = [];

export const atEnd = (task: () => void) => void tasks.push(task);

/** Each task runs even if one before it failed: a cleanup that fails is told, not fatal. */
export function runEndTasks(): void {
  for (const task of tasks.splice(0)) {
    try {
      task();
    } catch (error) {
      console.warn(`cleanup at the end of the run failed: ${error}`);
    }
  }
}

process.on("exit", runEndTasks);
