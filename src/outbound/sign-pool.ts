/**
 * DKIM signing off the event loop: the RSA-2048 and Ed25519 signatures of a message cost about
 * 0.7 ms of CPU, twice what everything else a delivery does on the event loop, so they are made on
 * worker threads (./sign-worker), one per core, while the event loop keeps the SMTP sessions
 * moving. Handing a message to a thread and back costs the event loop about 0.05 ms; signing on it
 * instead took its CPU per message from 0.3 to 1 ms, and the queue sent a fifth to a half fewer
 * messages a second (bench/outbound).
 * With one core, or when no thread can run, they are made on this thread. A thread that stops is
 * replaced, as in every pool (../workers/pool). The threads start with the first message to sign
 * and stop after a minute without one, which gives their heaps back to a server that sends nothing.
 */
import { availableParallelism } from "node:os";
import { signMessage, type RsaEngine, type SignOptions, type SigningKey } from "../dkim/sign";
import type { Logger } from "../log";
import { startOnDemandPool, type OnDemandPool } from "../workers/pool";
import { asBuffer } from "../workers/transfer";
import { workerUrl } from "../workers/url";
import { KEY_SETS_KEPT, type SignProtocol } from "./sign-protocol";

/** What a message is signed with; how RSA signatures are made is the signer's (createSigner). */
export type MessageSigning = Required<Omit<SignOptions, "rsaEngine">>;

export interface Signer {
  sign(raw: Uint8Array, options: MessageSigning): Promise<Buffer>;
  close(): void;
}

/** One signing thread per core; none on a single core, where the main thread signs. */
export const defaultSigningThreads = () => (availableParallelism() > 1 ? availableParallelism() : 0);

/**
 * The key sets a signing thread holds, in the order it was sent them: a key set is the array
 * SigningKeys hands out, the same object while it is cached.
 */
type SentKeySets = Set<SigningKey[]>;

/** How long the threads stay without a message to sign before they stop (the next one starts them again). */
const IDLE_THREADS_MS = 60_000;

/**
 * Signing threads, started on first use; `threads` 0 signs on this thread. `rsaEngine`:
 * INBOXD_DKIM_RSA. `idleThreadsMs`: a minute unless given (tests).
 */
export function createSigner(log: Logger, threads = defaultSigningThreads(), rsaEngine: RsaEngine = "auto", idleThreadsMs = IDLE_THREADS_MS): Signer & Pick<OnDemandPool<SignProtocol>, "threadsRunning"> {
  const pool = startOnDemandPool<SignProtocol, SentKeySets>({ name: "DKIM signing", url: workerUrl("outbound/sign-worker.ts"), threads, setup: { rsaEngine }, notes: (): SentKeySets => new Set(), log, idleMs: idleThreadsMs });
  let closed = false;
  const keySetIds = new WeakMap<SigningKey[], number>();
  let nextKeySetId = 1;
  const signHere = (raw: Uint8Array, options: MessageSigning) => new Promise<Buffer>((resolve) => resolve(signMessage(raw, { ...options, rsaEngine })));
  const request = (raw: Uint8Array, options: MessageSigning, sent: SentKeySets): SignProtocol["request"] => {
    let keySet = keySetIds.get(options.keys);
    if (keySet === undefined) keySetIds.set(options.keys, (keySet = nextKeySetId++));
    const message = { keySet, raw, signTime: options.signTime.getTime() };
    if (sent.has(options.keys)) return message;
    sent.add(options.keys);
    if (sent.size > KEY_SETS_KEPT) sent.delete(sent.values().next().value!);
    const keys = options.keys.map(({ selector, algorithm, privateKeyPem }) => ({ selector, algorithm, privateKeyPem }));
    return { ...message, keys: { domain: options.domain, keys } };
  };
  return {
    sign(raw, options) {
      if (closed) return signHere(raw, options);
      return pool.run({ message: (sent) => request(raw, options, sent), here: () => signHere(raw, options) }).then(asBuffer);
    },
    threadsRunning: () => pool.threadsRunning(),
    close() {
      closed = true;
      pool.close();
    },
  };
}
