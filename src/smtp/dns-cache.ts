// A small cache in front of the DNS look-ups of inbound authentication. Mail from one sender
// arrives in bursts, and every message asks the same SPF, DKIM and DMARC questions; a caching
// resolver next to the server would answer them, but inboxd asks INBOXD_DNS_SERVERS directly.
import type { DNSResolver } from "mailauth";

export interface DnsCacheOptions {
  /**
   * How long an answer is reused. The resolver does not report record TTLs, so this is a fixed
   * bound, kept below the TTLs mail domains publish (300 s and up, as a rule).
   */
  ttlMs: number;
  maxEntries: number;
}

// Answers that say the name or record does not exist; anything else (a timeout, SERVFAIL) is
// temporary and asked again next time.
const PERMANENT_CODES = new Set(["ENOTFOUND", "ENODATA", "EBADNAME"]);

export function cachingResolver(resolve: DNSResolver, { ttlMs, maxEntries }: DnsCacheOptions): DNSResolver {
  const entries = new Map<string, { expiresAt: number; answer: ReturnType<DNSResolver> }>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const now = performance.now();
    const cached = entries.get(key);
    if (cached && cached.expiresAt > now) return cached.answer.then(copyAnswer);
    entries.delete(key);
    // Map order is insertion order: the first key is the oldest entry.
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    const answer = resolve(name, rrtype);
    entries.set(key, { expiresAt: now + ttlMs, answer });
    answer.catch((error: { code?: string }) => {
      if (!PERMANENT_CODES.has(error?.code ?? "")) entries.delete(key);
    });
    return answer.then(copyAnswer);
  };
}

/** Each caller gets its own arrays, so that no caller can change what the next one reads. */
function copyAnswer<T>(answer: T): T {
  return (Array.isArray(answer) ? answer.map((item) => (Array.isArray(item) ? [...item] : typeof item === "object" && item ? { ...item } : item)) : answer) as T;
}
