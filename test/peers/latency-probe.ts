// A process of its own that asks each URL in turn every 50 ms and, on SIGTERM, prints the slowest
// answer of each in milliseconds, in the order given: a latency measured here is the server's,
// not the test process's own busy loop. A bare server's URL beside the one under test measures
// what the machine itself adds (other processes on its cores) in the same moments.
import { argv } from "node:process";

const urls = argv.slice(2);
const slowest = urls.map(() => 0);
let running = true;
process.on("SIGTERM", () => {
  running = false;
});
while (running) {
  for (const [i, url] of urls.entries()) {
    const started = performance.now();
    await fetch(url).then((res) => res.arrayBuffer());
    slowest[i] = Math.max(slowest[i]!, performance.now() - started);
  }
  await Bun.sleep(50);
}
console.log(slowest.map((ms) => ms.toFixed(1)).join(" "));
