// mailauth ships no types for its tools module; this declares the one function inboxd uses.
declare module "mailauth/lib/tools" {
  import type { DNSResolver } from "mailauth";

  /** Fetches and validates a DKIM key record as a verifier reads it (RFC 6376 §3.6.1, RFC 8463 §4). */
  export function getPublicKey(
    type: "DKIM",
    name: string,
    minBitLength: number,
    resolver: DNSResolver,
    /** `hashAlgo`: refuse a record whose h= tag leaves this hash out; `strict`: refuse what RFC 6376 has verifiers discard (its tag names and v= as written, an Ed25519 key only with k=). */
    options?: { hashAlgo?: string; strict?: boolean },
  ): Promise<{ publicKey: string; rr: string; keyType: string; modulusLength?: number }>;
}
