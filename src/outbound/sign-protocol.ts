// What the DKIM signer (./sign-pool) and its threads (./sign-worker) say to each other.
import type { RsaEngine, SigningKey } from "../dkim/sign";

export interface SignProtocol {
  setup: { rsaEngine: RsaEngine };
  /** A key set goes to a thread with the first message signed with it there; later messages name it only. */
  request: { keySet: number; keys?: { domain: string; keys: SigningKey[] }; raw: Uint8Array; signTime: number };
  reply: Uint8Array;
}

/**
 * Key sets a thread keeps (one per sending domain, and each rotation a new one), the oldest
 * forgotten first: the thread (./sign-worker) and the pool's notes on it forget the same one at
 * the same request, so that a message never names a key set its thread no longer has.
 */
export const KEY_SETS_KEPT = 256;
