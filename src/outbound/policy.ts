/**
 * What an SMTP answer means for a recipient, and when to try again: RFC 5321 §4.2.1 reply classes
 * (2yz accepted, 4yz try later, 5yz never), RFC 3463 enhanced status codes to tell a dead address
 * from a refused message, and the retry schedule of INBOXD_DELIVERY_RETRY_DELAYS.
 */

/** One try, then one more after each delay; after the last the recipient bounces. */
export const maxTries = (retryDelaysSeconds: number[]) => retryDelaysSeconds.length + 1;

// Retries spread over up to a tenth more than the delay, so that recipients deferred together by a
// struggling server do not all come back in the same second. Never earlier than the delay.
const JITTER = 0.1;

/** How long after try `tryNumber` (1-based) failed the next one goes out, jitter included. */
export function retryDelayMs(retryDelaysSeconds: number[], tryNumber: number, random: () => number = Math.random): number {
  const seconds = retryDelaysSeconds[Math.min(tryNumber, retryDelaysSeconds.length) - 1] ?? 0;
  return Math.round(seconds * 1000 * (1 + JITTER * random()));
}

/**
 * When a delivery's last try falls due should every try fail, the recipient bouncing when that
 * try fails too: a queued delivery's `expiresAt`. The rule: the next try (try `attempts` + 1, as
 * `attempts` counts the tries made, one in flight included), then each delay of the schedule still
 * to come after it: nextAttemptAt + the sum of retryDelays[attempts..]. Before the first try (due
 * at creation) that is the creation time + the whole schedule (about 4.5 days by default). The
 * delays count as configured: each retry may go out up to a tenth of its delay later (the jitter
 * above) and a busy queue may be late, so the last try can come somewhat later, never earlier.
 * Undefined when no try is to come (a final delivery).
 */
export function lastTryDueAt(retryDelaysSeconds: readonly number[], attempts: number, nextAttemptAt: number | null): number | undefined {
  if (nextAttemptAt === null) return undefined;
  let due = nextAttemptAt;
  for (let i = attempts; i < retryDelaysSeconds.length; i++) due += retryDelaysSeconds[i]! * 1000;
  return due;
}

/** RFC 3463 §2 status-code, as servers put it right after the reply code: "550 5.1.1 ...". */
const ENHANCED_STATUS = /^\d{3}[ -]([245])\.(\d{1,3})\.(\d{1,3})\b/;

/** RFC 3463 §3.2: X.1.7 and X.1.8 say the sender's address is bad, not the recipient's. */
const SENDER_ADDRESS_DETAILS = new Set(["7", "8"]);

/**
 * A permanent refusal of a recipient (a RCPT TO reply, or a DSN's status for it) that says the
 * address itself is bad, so that later mail to it is suppressed: RFC 3463 X.1.x (addressing: no
 * such mailbox, no such domain) but for the sender's address, and X.2.1 (mailbox disabled). A
 * message refused for its content, size or a policy (X.2.3, X.3.x, X.6.x, X.7.x ...) is a bounce
 * of that message only. A 5xx without an enhanced code counts as a dead address, as most at RCPT are.
 */
export function isHardBounce(reply: string): boolean {
  const match = ENHANCED_STATUS.exec(reply.trim());
  if (!match) return /^5\d\d/.test(reply.trim());
  const [, klass, subject, detail] = match;
  return klass === "5" && ((subject === "1" && !SENDER_ADDRESS_DETAILS.has(detail!)) || (subject === "2" && detail === "1"));
}

/** The same test on a bare RFC 3463 status of a DSN ("5.1.1"). */
export const isHardBounceStatus = (status: string) => isHardBounce(`550 ${status}`);

/** Why mail to an address is no longer sent: a hard bounce from it, or a complaint (a feedback report) from its owner. */
export type SuppressionReason = "bounced" | "complained";

/** Where one recipient of a sent message stands: waiting for a try, or final. */
export type DeliveryStatus = "queued" | "delivered" | "bounced" | "rejected";
