// Loopback ports for the peers tests and benchmarks start (pebble, PostgreSQL, SMTP sinks).
import { readFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, for a process started later to bind.
 * It is chosen below the kernel's ephemeral range where the machine says what that is, so that
 * neither an outgoing connection nor a listener on port 0 (every other server of the suite) can
 * take it before that process binds it.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralRangeStart();
  for (let tries = 0; below !== undefined && tries < 50; tries++) {
    const port = reservedPortsEnd + Math.floor(Math.random() * (below - reservedPortsEnd));
    if (await listenable(port)) return port;
  }
  return listenOnce(0);
}

/** Ports below this are left alone: well-known and registered services a developer's machine may run. */
const reservedPortsEnd = 10_000;

function ephemeralRangeStart(): number | undefined {
  try {
    const start = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return start > reservedPortsEnd + 1_000 ? start : undefined;
  } catch {
    return undefined;
  }
}

async function listenable(port: number): Promise<boolean> {
  return listenOnce(port).then(() => true, () => false);
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const bound = (server.address() as AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
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
