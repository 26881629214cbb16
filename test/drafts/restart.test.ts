import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { register, seedOrganization, startChildServer, tempDir, testEnv, type ApiClient, type ChildServer } from "../harness";
import { createInbox, startMessageServer } from "../messages/helpers";
import { startDnsServer } from "../peers/dns-server";

const children: ChildServer[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const child of children) if (child.proc.exitCode === null) await child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const body = (to: string, subject: string, sendAt: number) => ({ to: [to], subject, text: "Scheduled.", html: "", sendAt: new Date(sendAt).toISOString() });

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting; last: ${JSON.stringify(value)}`);
    await Bun.sleep(50);
  }
}

test("a scheduled draft survives a restart on the same data dir, and goes out once its time comes on the restarted server's clock", async () => {
  const first = await startMessageServer();
  const dataDir = first.dataDir;
  const key = (await seedOrganization(first.app)).apiKey;
  const from = await createInbox(first, key);
  const to = await createInbox(first, key);
  const draft = (await first.api.post(`/v1/inboxes/${from.id}/drafts`, body(to.email, "After the restart", first.clock.now() + 3_600_000), key)).body;
  await first.stop();

  const second = await startMessageServer({}, dataDir);
  try {
    second.clock.advance(3_600_000);
    await second.app.queues.runDueNow("drafts");
    const sent = (await second.api.get(`/v1/inboxes/${from.id}/drafts/${draft.id}`, key)).body;
    expect(sent.status).toBe("sent");
    const arrived = (await second.api.get(`/v1/inboxes/${to.id}/messages`, key)).body as { subject: string }[];
    expect(arrived.map((m) => m.subject)).toEqual(["After the restart"]);
  } finally {
    await second.cleanup();
  }
});

test("a draft a crashed run left being sent is scheduled again at the next start, even when that run's clock was ahead (corrected by NTP since)", async () => {
  const first = await startMessageServer();
  const dataDir = first.dataDir;
  const key = (await seedOrganization(first.app)).apiKey;
  const from = await createInbox(first, key);
  const to = await createInbox(first, key);
  const draft = (await first.api.post(`/v1/inboxes/${from.id}/drafts`, body(to.email, "Claimed two hours ahead", first.clock.now() + 60_000), key)).body;
  // A run two hours ahead claimed it for sending, then died before it was sent.
  expect(await first.app.store.transaction((tx) => tx.drafts.claim(draft.id, ["scheduled"], first.clock.now() + 2 * 3_600_000))).toBeDefined();
  await first.stop();

  const second = await startMessageServer({}, dataDir);
  try {
    second.clock.advance(60_000);
    await second.app.queues.runDueNow("drafts");
    expect((await second.api.get(`/v1/inboxes/${from.id}/drafts/${draft.id}`, key)).body.status).toBe("sent");
    const arrived = (await second.api.get(`/v1/inboxes/${to.id}/messages`, key)).body as { subject: string }[];
    expect(arrived.map((m) => m.subject)).toEqual(["Claimed two hours ahead"]);
  } finally {
    await second.cleanup();
  }
});

test("the real process: killed with SIGKILL before sendAt, started again after it, the draft goes out at once, and once; a live one within seconds of its time", async () => {
  const dns = await startDnsServer();
  const dataDir = tempDir();
  dirs.push(dataDir);
  const env = testEnv(dataDir, { INBOXD_DNS_SERVERS: dns.address });
  try {
    const first = await startChildServer(env);
    children.push(first);
    const account = await register(first.api);
    const key = account.apiKey.key;
    const to = (await first.api.post("/v1/inboxes", { name: "Recipient" }, key)).body as { id: string; email: string };
    const drafts = `/v1/inboxes/${account.inbox.id}/drafts`;
    const sendAt = Date.now() + 1_500;
    const draft = (await first.api.post(drafts, body(to.email, "Across a crash", sendAt), key)).body;
    expect(draft.status).toBe("scheduled");
    expect(await first.kill("SIGKILL")).not.toBe(0);
    // Its time passes while no server runs.
    await Bun.sleep(Math.max(0, sendAt - Date.now()) + 200);

    const second = await startChildServer(env);
    children.push(second);
    const api: ApiClient = second.api;
    const sent = await eventually(() => api.get(`${drafts}/${draft.id}`, key).then((res) => res.body), (d) => d.status === "sent");
    const arrived = () => api.get(`/v1/inboxes/${to.id}/messages`, key).then((res) => res.body as { subject: string }[]);
    expect((await arrived()).filter((m) => m.subject === "Across a crash")).toHaveLength(1);

    const liveAt = Date.now() + 1_500;
    const live = (await api.post(drafts, body(to.email, "On time", liveAt), key)).body;
    const done = await eventually(() => api.get(`${drafts}/${live.id}`, key).then((res) => res.body), (d) => d.status === "sent");
    const message = (await api.get(`/v1/inboxes/${account.inbox.id}/messages/${done.messageId}`, key)).body;
    expect(Date.parse(message.createdAt) - liveAt).toBeGreaterThanOrEqual(0);
    expect(Date.parse(message.createdAt) - liveAt).toBeLessThan(3_000);
    expect(sent.messageId).not.toBe(done.messageId);
    expect((await arrived()).map((m) => m.subject).sort()).toEqual(["Across a crash", "On time"]);
    await second.kill("SIGTERM");
  } finally {
    await dns.close();
  }
}, 40_000);
