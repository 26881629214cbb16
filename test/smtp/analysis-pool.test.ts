// The analysis threads start with the first message and stop once they have been idle for a while,
// giving their heaps back; the next message starts them again.
import { expect, test } from "bun:test";
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
