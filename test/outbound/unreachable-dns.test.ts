// A DNS server that cannot be reached, and errors nobody catches: the real process keeps serving.
import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { eventually, register, repoRoot, startChildServer, tempDir, testEnv, type ChildServer } from "../harness";

const dataDirs: string[] = [];
const children: ChildServer[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.proc.exitCode === null) await child.kill("SIGKILL");
  for (const dir of dataDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function startChild(overrides: Record<string, string>, command?: string[]): Promise<ChildServer> {
  const dataDir = tempDir();
  dataDirs.push(dataDir);
  const child = await startChildServer(testEnv(dataDir, { INBOXD_DELIVERY_RETRY_DELAYS: "60", ...overrides }), { command });
  children.push(child);
  return child;
}

test("with its only DNS server unroutable, a send is deferred (temporary DNS failure) and the process keeps serving", async () => {
  // A link-local address without a scope: the socket's connect fails on this machine (no route),
  // without a packet sent anywhere.
  const child = await startChild({ INBOXD_DNS_SERVERS: "[fe80::1]:53" });
  const account = await register(child.api);
  const sent = await child.api.request("POST", `/v1/inboxes/${account.inbox.id}/messages/send`, {
    token: account.apiKey.key,
    body: { to: ["ann@remote.test"], subject: "Hi", text: "Hi.", html: "<p>Hi.</p>" },
  });
  expect(sent.status).toBe(201);
  const read = async () => (await child.api.get(`/v1/inboxes/${account.inbox.id}/messages/${sent.body.id}`, account.apiKey.key)).body;
  const message = await eventually("the first try", read, (m) => m.deliveries[0].lastResponse !== undefined);

  expect(message.status).toBe("sent");
  expect(message.deliveries[0]).toMatchObject({ status: "queued", attempts: 1, lastResponse: "DNS MX look-up for remote.test failed: ECONNREFUSED" });
  expect((await child.api.get("/health")).status).toBe(200);
  expect(child.proc.exitCode).toBeNull();
  expect(child.output()).not.toContain("still serving");
}, 30_000);

test("an uncaught exception or unhandled rejection is logged and the server keeps serving", async () => {
  const child = await startChild({}, [process.execPath, "--preload", join(import.meta.dir, "fixtures/stray-errors.ts"), join(repoRoot, "src/main.ts")]);
  child.proc.kill("SIGUSR2");
  const output = async () => {
    if (child.proc.exitCode !== null) throw new Error(`inboxd exited with ${child.proc.exitCode}:\n${child.output()}`);
    return child.output();
  };
  await eventually("both errors logged", output, (output) => output.includes("uncaught exception; still serving") && output.includes("unhandled rejection; still serving"));
  expect(child.output()).toContain("stray exception from a test fixture");
  expect(child.output()).toContain("stray rejection from a test fixture");
  expect((await child.api.get("/health")).status).toBe(200);
  expect(child.proc.exitCode).toBeNull();
}, 30_000);
