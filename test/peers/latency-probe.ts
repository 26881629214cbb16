// A process of its own that asks a URL every 50 ms and, on SIGTERM, prints the slowest answer in
// milliseconds: a latency measured here is the server's, not the test process's own busy loop.
import { argv } from "node:process";

const url = argv[2]!;
let slowest = 0;
let running = true;
process.on("SIGTERM", () => {
  running = false;
});
while (running) {
  const started = performance.now();
  await fetch(url).then((res) => res.arrayBuffer());
  slowest = Math.max(slowest, performance.now() - started);
  await Bun.sleep(50);
}
console.log(slowest.toFixed(1));
