// Loopback ports for the peers tests and benchmarks start (pebble, PostgreSQL, SMTP sinks).
import { connect, createServer, type AddressInfo } from "node:net";

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
