// The analysis threads start with the first message and stop once they have been idle for a while,
// giving their heaps back; the next message starts them again. They run below the event loop's
// priority.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createLogger } from "../../src/log";
import { createAnalysisPool } from "../../src/smtp/analysis-pool";
import { startDnsServer } from "../peers/dns-server";

const message = () => Buffer.from("From: alice@sender.test\r\nTo: bob@inboxd.test\r\nSubject: hi\r\n\r\nHello.\r\n");
const identity = { clientIp: "127.0.0.1", helo: "client.example", mailFrom: "alice@sender.test" };

test("no analysis threads until a message comes; they stop after their idle time and start again with the next", async () => {
  const dns = await startDnsServer();
  const pool = createAnalysisPool({ workers: 2, authservId: "mx.inboxd.test", dnsServers: [dns.address], timeoutMs: 10_000, log: createLogger("json", "silent"), idleThreadsMs: 300 });
  try {
    expect(pool.threadsRunning()).toBe(false);
    expect((await pool.analyze(message(), identity)).parsed.subject).toBe("hi");
    expect(pool.threadsRunning()).toBe(true);
    await Bun.sleep(100);
    expect(pool.threadsRunning()).toBe(true);
    for (const deadline = Date.now() + 5_000; pool.threadsRunning() && Date.now() < deadline; ) await Bun.sleep(25);
    expect(pool.threadsRunning()).toBe(false);
    expect((await pool.analyze(message(), identity)).parsed.subject).toBe("hi");
    expect(pool.threadsRunning()).toBe(true);
  } finally {
    pool.close();
    await dns.close();
  }
}, 20_000);

/** Each thread of this process: its id, name and nice value, from /proc (field 19 of its stat). */
function threads(): { tid: string; name: string; nice: number }[] {
  return readdirSync("/proc/self/task").flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      return [{ tid, name: readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim(), nice: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]) }];
    } catch {
      return []; // The thread ended while the list was read.
    }
  });
}

const perThreadPriority = existsSync("/proc/thread-self");
test.skipIf(!perThreadPriority)(`${perThreadPriority ? "" : "skipped: no per-thread priority here (Linux only) — "}each analysis thread runs at nice 10, the event loop at its own`, async () => {
  const before = new Set(threads().map(({ tid }) => tid));
  const dns = await startDnsServer();
  const pool = createAnalysisPool({ workers: 2, authservId: "mx.inboxd.test", dnsServers: [dns.address], timeoutMs: 10_000, log: createLogger("json", "silent") });
  try {
    await Promise.all([pool.analyze(message(), identity), pool.analyze(message(), identity)]);
    // Bun names a worker's thread "Worker".
    const started = threads().filter(({ tid, name }) => name === "Worker" && !before.has(tid));
    expect(started.map(({ nice }) => nice)).toEqual([10, 10]);
    expect(threads().find(({ tid }) => tid === String(process.pid))!.nice).toBe(0);
  } finally {
    pool.close();
    await dns.close();
  }
});
