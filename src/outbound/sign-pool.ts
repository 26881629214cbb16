/**
 * DKIM signing off the event loop: the RSA-2048 and Ed25519 signatures of a message cost about
 * 0.7 ms of CPU, twice what everything else a delivery does on the event loop, so they are made on
 * worker threads (./sign-worker), one per core, while the event loop keeps the SMTP sessions
 * moving. Handing a message to a thread and back costs the event loop about 0.05 ms; signing on it
 * instead took its CPU per message from 0.3 to 1 ms, and the queue sent a fifth to a half fewer
 * messages a second (bench/outbound).
 * With one core, or when no thread can run, they are made on this thread.
 */
import { availableParallelism } from "node:os";
import { signMessage, type RsaEngine, type SignOptions, type SigningKey } from "../dkim/sign";
import type { Logger } from "../log";

/** Keys go to a thread once per set (`keys`), then each message names its set (`sign`). */
export type SignRequest =
  | { type: "keys"; keySet: number; domain: string; keys: SigningKey[]; rsaEngine: RsaEngine }
  | { type: "sign"; id: number; keySet: number; raw: Uint8Array; signTime: number };

export type SignReply = { id: number; signed: Uint8Array } | { id: number; error: string };

/** What a message is signed with; how RSA signatures are made is the signer's (createSigner). */
export type MessageSigning = Required<Omit<SignOptions, "rsaEngine">>;

export interface Signer {
  sign(raw: Uint8Array, options: MessageSigning): Promise<Buffer>;
  close(): void;
}

// In the single executable every module has the executable's URL, and the worker, a second
// entry point of `bun build --compile` (package.json), sits at its path below src/.
const workerUrl = import.meta.path.startsWith("/$bunfs/") ? new URL("./outbound/sign-worker.ts", import.meta.url) : new URL("./sign-worker.ts", import.meta.url);

/** One signing thread per core; none on a single core, where the main thread signs. */
export const defaultSigningThreads = () => (availableParallelism() > 1 ? availableParallelism() : 0);

/** Signing threads, started on first use; `threads` 0 signs on this thread. `rsaEngine`: INBOXD_DKIM_RSA. */
export function createSigner(log: Logger, threads = defaultSigningThreads(), rsaEngine: RsaEngine = "auto"): Signer {
  let pool: SigningThread[] | undefined;
  let closed = false;
  const usable = () => (pool ??= Array.from({ length: threads }, () => new SigningThread(log, rsaEngine))).filter((thread) => thread.alive);
  return {
    sign(raw, options) {
      const alive = closed ? [] : usable();
      if (alive.length === 0) return new Promise((resolve) => resolve(signMessage(raw, { ...options, rsaEngine })));
      // The least busy thread: messages differ in size.
      return alive.reduce((best, thread) => (thread.pending < best.pending ? thread : best)).sign(raw, options);
    },
    close() {
      closed = true;
      for (const thread of pool ?? []) thread.close("the DKIM signer was closed");
    },
  };
}

type Waiting = { resolve: (signed: Buffer) => void; reject: (error: Error) => void };

/** One worker thread. A thread that fails is not restarted: its share falls to the others, or to the main thread. */
class SigningThread {
  alive = true;
  private readonly worker: Worker;
  private readonly waiting = new Map<number, Waiting>();
  // A key set is the array SigningKeys hands out, the same object while it is cached.
  private readonly keySets = new WeakMap<object, number>();
  private nextId = 1;

  constructor(
    private readonly log: Logger,
    private readonly rsaEngine: RsaEngine,
  ) {
    this.worker = new Worker(workerUrl);
    // The queue's timers keep the process alive while it runs; a thread never does by itself.
    this.worker.unref();
    this.worker.onmessage = ({ data: reply }: MessageEvent<SignReply>) => this.settle(reply);
    this.worker.onerror = (event) => this.fail(event.message);
    this.worker.addEventListener("close", () => this.fail("exited"));
  }

  get pending(): number {
    return this.waiting.size;
  }

  sign(raw: Uint8Array, options: MessageSigning): Promise<Buffer> {
    let keySet = this.keySets.get(options.keys);
    if (keySet === undefined) {
      keySet = this.nextId++;
      this.keySets.set(options.keys, keySet);
      const keys = options.keys.map(({ selector, algorithm, privateKeyPem }) => ({ selector, algorithm, privateKeyPem }));
      this.worker.postMessage({ type: "keys", keySet, domain: options.domain, keys, rsaEngine: this.rsaEngine } satisfies SignRequest);
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ type: "sign", id, keySet, raw, signTime: options.signTime.getTime() } satisfies SignRequest);
    });
  }

  close(reason: string) {
    if (!this.alive) return;
    this.alive = false;
    this.worker.terminate();
    for (const { reject } of this.waiting.values()) reject(new Error(reason));
    this.waiting.clear();
  }

  private settle(reply: SignReply) {
    const waiting = this.waiting.get(reply.id);
    this.waiting.delete(reply.id);
    if (!waiting) return;
    if ("signed" in reply) waiting.resolve(Buffer.from(reply.signed.buffer, reply.signed.byteOffset, reply.signed.byteLength));
    else waiting.reject(new Error(reply.error));
  }

  private fail(reason: string) {
    if (!this.alive) return;
    this.log.error("a DKIM signing thread stopped; the others (or the main thread) sign from now on", { reason });
    this.close(`the DKIM signing thread stopped: ${reason}`);
  }
}
