import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { register, seedOrganization, startChildServer, tempDir, testEnv, type ApiClient, type ChildServer, type TestServer } from "../harness";
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

/**
 * A draft scheduled `dueInMs` ahead on one server, `beforeStop` done to it there; then a second
 * server on the same data dir whose clock passes that time: the draft is sent there, once.
 */
async function sentAfterRestart(subject: string, dueInMs: number, beforeStop: (server: TestServer, draftId: string) => Promise<void> = async () => {}) {
  const first = await startMessageServer();
  const key = (await seedOrganization(first.app)).apiKey;
  const from = await createInbox(first, key);
  const to = await createInbox(first, key);
  const draft = (await first.api.post(`/v1/inboxes/${from.id}/drafts`, body(to.email, subject, first.clock.now() + dueInMs), key)).body;
  await beforeStop(first, draft.id);
  await first.stop();

  const second = await startMessageServer({}, first.dataDir);
  try {
    second.clock.advance(dueInMs);
    await second.app.queues.runDueNow("drafts");
    expect((await second.api.get(`/v1/inboxes/${from.id}/drafts/${draft.id}`, key)).body.status).toBe("sent");
    const arrived = (await second.api.get(`/v1/inboxes/${to.id}/messages`, key)).body as { subject: string }[];
    expect(arrived.map((m) => m.subject)).toEqual([subject]);
  } finally {
    await second.cleanup();
  }
}

test("a scheduled draft survives a restart on the same data dir, and goes out once its time comes on the restarted server's clock", () => sentAfterRestart("After the restart", 3_600_000));

test("a draft a crashed run left being sent is scheduled again at the next start, even when that run's clock was ahead (corrected by NTP since)", () =>
  sentAfterRestart("Claimed two hours ahead", 60_000, async (first, draftId) => {
    // A run two hours ahead claimed it for sending, then died before it was sent.
    expect(await first.app.store.transaction((tx) => tx.drafts.claim(draftId, ["scheduled"], first.clock.now() + 2 * 3_600_000))).toBeDefined();
  }));

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
