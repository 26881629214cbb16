import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { dkimVerify } from "mailauth";
import { createResolver } from "../../src/dns/resolver";
import { register, repoRoot, startChildServer, tempDir, testEnv, type ApiClient, type ChildServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startSmtpSink, type SmtpRejection, type SmtpSink } from "../peers/smtp-sink";

// The real process end to end: `inboxd dns` publishes the service domain, `inboxd serve` sends,
// is killed with SIGKILL while a delivery waits for its retry, and the restarted process sends
// that one and nothing twice.
let dns: DnsServer;
let sink: SmtpSink;
let dataDir: string;
let env: Record<string, string>;
const answers = new Map<string, SmtpRejection>();
const children: ChildServer[] = [];

beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink({ respond: (rcpt) => answers.get(rcpt) });
  dataDir = tempDir();
  env = testEnv(dataDir, {
    INBOXD_DNS_SERVERS: dns.address,
    INBOXD_OUTBOUND_PORT: String(sink.port),
    INBOXD_DELIVERY_RETRY_DELAYS: "1,1,1,1,1",
    INBOXD_SMTP_CLIENT_TIMEOUT_SCALE: "0.01",
    INBOXD_PUBLIC_IPS: "127.0.0.1",
  });
  dns.set("remote.test", "MX", [{ exchange: "mx.remote.test", priority: 10 }]);
  dns.set("mx.remote.test", "A", ["127.0.0.1"]);
});
afterAll(async () => {
  for (const child of children) if (child.proc.exitCode === null) await child.kill("SIGKILL");
  await sink.close();
  await dns.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const inboxdDns = () => Bun.spawnSync([process.execPath, join(repoRoot, "src/main.ts"), "dns"], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting; last: ${JSON.stringify(value)}`);
    await Bun.sleep(50);
  }
}

test("inboxd dns, then serve: delivered, DKIM-valid, and after kill -9 the waiting delivery goes out once and nothing twice", async () => {
  const printed = inboxdDns();
  expect(printed.exitCode).toBe(0);
  const zone = printed.stdout.toString();
  expect(zone).toContain("inboxd.test.\t3600\tIN\tMX\t10 mx.inboxd.test.");
  expect(zone).toContain('inboxd.test.\t3600\tIN\tTXT\t"v=spf1 ip4:127.0.0.1 -all"');
  expect(zone.match(/^inboxd\d{8}[re]\._domainkey\.inboxd\.test\.\t3600\tIN\tTXT\t"v=DKIM1; k=(rsa|ed25519); p=/gm)).toHaveLength(2);
  expect(zone).toContain('_dmarc.inboxd.test.\t3600\tIN\tTXT\t"v=DMARC1; p=quarantine; adkim=r; aspf=r"');
  // Return paths are on the host name: receivers check SPF there too.
  expect(zone).toContain('mx.inboxd.test.\t3600\tIN\tTXT\t"v=spf1 ip4:127.0.0.1 -all"');
  expect(zone).toContain("mx.inboxd.test.\t3600\tIN\tA\t127.0.0.1");
  dns.setZoneFile(zone);

  const first = await startChildServer(env);
  children.push(first);
  const account = await register(first.api);
  const send = (api: ApiClient, to: string) =>
    api.request("POST", `/v1/inboxes/${account.inbox.id}/messages/send`, { token: account.apiKey.key, body: { to: [to], subject: "Hi", text: "Hi.", html: "<p>Hi.</p>" } });
  const get = (api: ApiClient, id: string) => api.get(`/v1/inboxes/${account.inbox.id}/messages/${id}`, account.apiKey.key).then((res) => res.body);

  const delivered = (await send(first.api, "ann@remote.test")).body;
  await eventually(() => get(first.api, delivered.id), (m) => m.status === "delivered");

  answers.set("bob@remote.test", { code: 451, message: "4.3.0 Try again later" });
  const waiting = (await send(first.api, "bob@remote.test")).body;
  await eventually(() => get(first.api, waiting.id), (m) => m.deliveries[0].attempts >= 1);
  // While inboxd holds the data dir, `inboxd dns` reads the same keys.
  expect(inboxdDns().stdout.toString()).toBe(zone);

  expect(await first.kill("SIGKILL")).not.toBe(0);
  answers.delete("bob@remote.test");

  const second = await startChildServer(env);
  children.push(second);
  const after = await eventually(() => get(second.api, waiting.id), (m) => m.status === "delivered");
  expect(after.deliveries[0].status).toBe("delivered");
  await Bun.sleep(2500); // longer than every retry delay: a second copy would have gone out by now
  expect(sink.messages.filter((m) => m.rcptTo.includes("ann@remote.test"))).toHaveLength(1);
  expect(sink.messages.filter((m) => m.rcptTo.includes("bob@remote.test"))).toHaveLength(1);
  expect((await get(second.api, delivered.id)).deliveries[0]).toMatchObject({ status: "delivered", attempts: 1 });

  // The records `inboxd dns` printed are the ones that verify what was sent.
  const signed = sink.messages.find((m) => m.rcptTo.includes("ann@remote.test"))!.raw;
  const verified = await dkimVerify(signed, { resolver: createResolver([dns.address]).forMailauth });
  expect(verified.results.map((r) => r.status?.result)).toEqual(["pass", "pass"]);
  expect(await second.kill("SIGTERM")).toBe(0);
}, 30_000);
