// The time one message's authentication may spend waiting for DNS. A sender controls the names
// its mail makes us look up (its SPF record's includes and MX hosts, DKIM d= domains) and how
// slowly their name servers answer; unbounded, such a message would hold its analysis until the
// analysis deadline, whose passing replaces the thread and fails every analysis on it.
import type { DNSResolver } from "mailauth";
import { DnsLookupError } from "../dns/resolver";

export interface DnsBudget {
  /** Every look-up of one message ends within this long of its first. */
  totalMs: number;
  /** One look-up's longest wait. */
  perLookupMs: number;
}

/**
 * A third of the analysis deadline (10 s of the default 30 s), leaving the rest to parsing and
 * hashing, which share the thread with other analyses: the deadline then catches only work that
 * does not yield. RFC 7208 §4.6.4 asks that SPF be allowed at least 20 s, which a deadline of 60 s
 * gives; the default gives less, because a look-up past the budget only makes a result temperror,
 * which refuses nothing (with INBOXD_DMARC_ENFORCE the sender is asked to try again), while each
 * second of it is a second that a sender with slow DNS holds one of the thread's analyses.
 *
 * A look-up gets a quarter of the budget, so that one name server that never answers leaves the
 * checks after it (DMARC comes last) most of the budget. That is longer than one try of the
 * resolver (2 s), so a lost datagram is asked again within it.
 */
export function dnsBudgetOf(analysisTimeoutMs: number): DnsBudget {
  const totalMs = Math.floor(analysisTimeoutMs / 3);
  return { totalMs, perLookupMs: Math.floor(totalMs / 4) };
}

export interface BudgetedResolver {
  resolve: DNSResolver;
  /** Whether a look-up was cut short, or refused, for want of time: the results may be ours, not the sender's. */
  ranOut(): boolean;
}

/**
 * `lookUp` for one message, within `budget`. A look-up past it fails as a DNS timeout (ETIMEOUT),
 * which mailauth reports as temperror: SPF (RFC 7208 §4.6.4, §2.6.7), DKIM (RFC 6376 §6.1.2) and
 * DMARC (RFC 7489 §11.2). What it cut short still runs below, within the resolver's own timeouts,
 * and an answer that comes fills the cache for the sender's next message.
 */
export function withinBudget(lookUp: DNSResolver, budget: DnsBudget): BudgetedResolver {
  let endsAt: number | undefined;
  let ranOut = false;
  const outOfTime = (name: string, rrtype: string) => {
    ranOut = true;
    return new DnsLookupError("temporary", "ETIMEOUT", name, rrtype);
  };
  return {
    resolve: (name, rrtype) => {
      const now = performance.now();
      endsAt ??= now + budget.totalMs;
      const waitMs = Math.min(budget.perLookupMs, endsAt - now);
      if (waitMs <= 0) return Promise.reject(outOfTime(name, rrtype));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(outOfTime(name, rrtype)), waitMs);
        lookUp(name, rrtype).then(resolve, reject).finally(() => clearTimeout(timer));
      });
    },
    ranOut: () => ranOut,
  };
}
