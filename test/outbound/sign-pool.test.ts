// The DKIM signer of the queue: its threads and the main thread make the same bytes (RSA PKCS#1 v1.5
// and Ed25519 signatures are deterministic), from a Buffer or from a plain Uint8Array (bun:sqlite's BLOB),
// whether OpenSSL (the threads, INBOXD_DKIM_RSA=auto) or node:crypto (the main thread, builtin) makes them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { generateDkimKeys, type DkimKey } from "../../src/dkim/keys";
import { signMessage } from "../../src/dkim/sign";
import { createLogger } from "../../src/log";
import { createSigner, type Signer } from "../../src/outbound/sign-pool";
import { KEY_SETS_KEPT } from "../../src/outbound/sign-protocol";

const DOMAIN = "pool.example.test";
const MESSAGE = Buffer.from(`From: a@${DOMAIN}\r\nTo: b@example.test\r\nSubject: pool\r\nDate: Sat, 14 Mar 2026 23:30:00 +0000\r\n\r\nHello.\r\n`);
const signTime = new Date("2026-03-15T08:00:00Z");
const log = createLogger("text", "silent");

let keys: DkimKey[];
let onThreads: Signer;
let onMainThread: Signer;

beforeAll(async () => {
  keys = await generateDkimKeys(signTime);
  onThreads = createSigner(log, 2);
  onMainThread = createSigner(log, 0, "builtin");
});
afterAll(() => {
  onThreads.close();
  onMainThread.close();
});

test("threads and main thread sign alike, Buffer or Uint8Array", async () => {
  const expected = signMessage(MESSAGE, { domain: DOMAIN, keys, signTime, rsaEngine: "builtin" });
  const options = { domain: DOMAIN, keys, signTime };
  const results = await Promise.all([onThreads.sign(MESSAGE, options), onThreads.sign(new Uint8Array(MESSAGE), options), onMainThread.sign(new Uint8Array(MESSAGE), options)]);
  for (const result of results) expect(Buffer.from(result).equals(expected)).toBe(true);
});

test("a refusal comes back as a rejected promise, from a thread and from the main thread", async () => {
  const withoutFrom = Buffer.from(MESSAGE.toString().replace(/^From: .*\r\n/, ""));
  const options = { domain: DOMAIN, keys, signTime };
  await expect(onThreads.sign(withoutFrom, options)).rejects.toThrow(/has no From field/);
  await expect(onMainThread.sign(withoutFrom, options)).rejects.toThrow(/has no From field/);
});

test("the threads start with the first message to sign, stop after their idle time, and start again with the next", async () => {
  const signer = createSigner(log, 2, "auto", 300);
  const options = { domain: DOMAIN, keys, signTime };
  const expected = signMessage(MESSAGE, { ...options, rsaEngine: "builtin" });
  try {
    expect(signer.threadsRunning()).toBe(false);
    expect(Buffer.from(await signer.sign(MESSAGE, options)).equals(expected)).toBe(true);
    expect(signer.threadsRunning()).toBe(true);
    for (const deadline = Date.now() + 5_000; signer.threadsRunning() && Date.now() < deadline; ) await Bun.sleep(25);
    expect(signer.threadsRunning()).toBe(false);
    // The new threads are sent the key set again.
    expect(Buffer.from(await signer.sign(MESSAGE, options)).equals(expected)).toBe(true);
    expect(signer.threadsRunning()).toBe(true);
  } finally {
    signer.close();
  }
});

test("past the key sets a thread keeps, the oldest is sent again with its next message, not named without its keys", async () => {
  const signer = createSigner(log, 1);
  const expected = signMessage(MESSAGE, { domain: DOMAIN, keys, signTime, rsaEngine: "builtin" });
  // A key set is the array SigningKeys hands out: one per sending domain, the same keys here.
  const keySets = Array.from({ length: KEY_SETS_KEPT + 2 }, () => [...keys]);
  try {
    for (const keySet of keySets) await signer.sign(MESSAGE, { domain: DOMAIN, keys: keySet, signTime });
    for (const keySet of [keySets[0]!, keySets[1]!, keySets.at(-1)!]) expect(Buffer.from(await signer.sign(MESSAGE, { domain: DOMAIN, keys: keySet, signTime })).equals(expected)).toBe(true);
  } finally {
    signer.close();
  }
});
