// Helpers shared by the benchmarks under bench/: loopback ports for the peers they start, and the CPU time of a database server.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export { freePort, waitForPort } from "../test/peers/ports";

const clockTicks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim() || 100);

/**
 * CPU seconds (user + system) a process and its children alive now have spent: a PostgreSQL
 * server's postmaster and backends, counted beside inboxd's own when the two engines are compared.
 */
export function processTreeCpuSeconds(pid: number): number {
  let ticks = 0;
  const visit = (id: string) => {
    try {
      const stat = readFileSync(`/proc/${id}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]); // utime and stime, fields 14 and 15
      for (const child of readFileSync(`/proc/${id}/task/${id}/children`, "utf8").trim().split(" ").filter(Boolean)) visit(child);
    } catch {
      // A backend that ended meanwhile.
    }
  };
  visit(String(pid));
  return ticks / clockTicks;
}

/** The postmaster of a cluster started by test/peers/postgres.ts: the first line of its postmaster.pid. */
export const postmasterPid = (clusterDir: string) => Number(readFileSync(join(clusterDir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
