/**
 * Delivery tries: check the URL and the addresses its host resolves to (SSRF guard, so DNS
 * rebinding cannot turn an approved name into a private address), sign the body by the Standard
 * Webhooks scheme, and POST it to the address that was checked. What does not change from one
 * try to the next (the URL check, the signing key, for a few seconds a host's checked
 * addresses) is worked out once, not per try.
 */
import { pinnedPost } from "./pinned-fetch";
import type { TryResult } from "./policy";
import { signWithKey, webhookSigningKey } from "./signature";
import { checkWebhookUrl, resolveAndCheck, type AddressCheck, type Lookup } from "./ssrf";

export const userAgent = "Service-Webhook/1.0";

/**
 * How long a host's checked addresses serve further tries: a burst of deliveries to one host
 * costs one look-up, not one per try. The guard still holds, since every connection goes to an
 * address that was checked (the answer is never looked up a second time); a host that moves is
 * followed this much later at most.
 */
export const hostCheckReuseMs = 5_000;
/** Entries kept per cache (URLs, secrets, hosts): beyond it a cache starts again empty. */
const cacheLimit = 10_000;

export interface DeliveryTry {
  url: string;
  secret: string;
  /** The event id: `webhook-id`, the same on every retry (receivers deduplicate on it). */
  eventId: string;
  body: string;
}

export interface DeliveryOptions {
  lookup: Lookup;
  allowPrivate: boolean;
  timeoutMs: number;
  /** Milliseconds since the epoch, for `webhook-timestamp` and the reuse of host checks. */
  now: () => number;
}

export type Deliverer = (delivery: DeliveryTry) => Promise<TryResult>;

export function createDeliverer(options: DeliveryOptions): Deliverer {
  const checkUrl = memoize((url: string) => checkWebhookUrl(url, options.allowPrivate));
  const signingKey = memoize(webhookSigningKey);
  const checkHost = reusedHostChecks(options);

  return async (delivery) => {
    const urlCheck = checkUrl(delivery.url);
    if (!urlCheck.ok) return refused(urlCheck.reason);
    const hostCheck = await checkHost(urlCheck.url.hostname);
    if (!hostCheck.ok) return refused(hostCheck.reason);
    const timestamp = Math.floor(options.now() / 1000);
    const answer = await pinnedPost({
      url: urlCheck.url,
      address: hostCheck.addresses[0]!,
      headers: {
        "content-type": "application/json",
        "user-agent": userAgent,
        "webhook-id": delivery.eventId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signWithKey(signingKey(delivery.secret), delivery.eventId, timestamp, delivery.body),
      },
      body: delivery.body,
      timeoutMs: options.timeoutMs,
    });
    if (answer.status === 0) return { statusCode: null, response: null, error: answer.error ?? "no response" };
    return { statusCode: answer.status, response: answer.body, error: describeStatus(answer.status) };
  };
}

/** resolveAndCheck, its approvals reused for hostCheckReuseMs; concurrent tries share one look-up. */
function reusedHostChecks({ lookup, allowPrivate, now }: DeliveryOptions): (host: string) => Promise<AddressCheck> {
  const checks = new Map<string, { until: number; check: Promise<AddressCheck> }>();
  return (host) => {
    const at = now();
    const reused = checks.get(host);
    if (reused && at < reused.until) return reused.check;
    if (checks.size >= cacheLimit) checks.clear();
    const check = resolveAndCheck(host, lookup, allowPrivate);
    const entry = { until: at + hostCheckReuseMs, check };
    checks.set(host, entry);
    // A refusal or a failed look-up is not reused: the next try asks again.
    void check.then((result) => {
      if (!result.ok && checks.get(host) === entry) checks.delete(host);
    });
    return check;
  };
}

/** A pure function's results by argument, in a cache of at most cacheLimit entries. */
function memoize<V>(compute: (key: string) => V): (key: string) => V {
  const values = new Map<string, V>();
  return (key) => {
    const known = values.get(key);
    if (known !== undefined) return known;
    if (values.size >= cacheLimit) values.clear();
    const value = compute(key);
    values.set(key, value);
    return value;
  };
}

const refused = (reason: string): TryResult => ({ statusCode: null, response: null, error: `refused: ${reason}` });

function describeStatus(status: number): string | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) return `redirect (${status}) not followed: only a 2xx answer is a success`;
  return `the endpoint answered ${status}, not 2xx`;
}
