// Helpers shared by the benchmarks under bench/: loopback ports for the peers they start, and the CPU time of a database server.
import { readFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { join } from "node:path";

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once something accepts connections on 127.0.0.1:`port`; throws after about 5 s. */
export async function waitForPort(port: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => (socket.destroy(), resolve(true)));
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await Bun.sleep(25);
  }
  throw new Error(`nothing listens on port ${port}`);
}

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
