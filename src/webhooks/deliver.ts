/**
 * One delivery try: check the URL and the addresses its host resolves to (SSRF guard, at every
 * try, so DNS rebinding cannot turn an approved name into a private address), sign the body by
 * the Standard Webhooks scheme, and POST it to the address that was checked.
 */
import { pinnedPost } from "./pinned-fetch";
import type { TryResult } from "./policy";
import { signWebhook } from "./signature";
import { checkWebhookUrl, resolveAndCheck, type Lookup } from "./ssrf";

export const userAgent = "Service-Webhook/1.0";

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
  /** Milliseconds since the epoch, for `webhook-timestamp`. */
  now: () => number;
}

export async function tryDelivery(delivery: DeliveryTry, options: DeliveryOptions): Promise<TryResult> {
  const urlCheck = checkWebhookUrl(delivery.url, options.allowPrivate);
  if (!urlCheck.ok) return refused(urlCheck.reason);
  const hostCheck = await resolveAndCheck(urlCheck.url.hostname, options.lookup, options.allowPrivate);
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
      "webhook-signature": signWebhook(delivery.secret, delivery.eventId, timestamp, delivery.body),
    },
    body: delivery.body,
    timeoutMs: options.timeoutMs,
  });
  if (answer.status === 0) return { statusCode: null, response: null, error: answer.error ?? "no response" };
  return { statusCode: answer.status, response: answer.body, error: describeStatus(answer.status) };
}

const refused = (reason: string): TryResult => ({ statusCode: null, response: null, error: `refused: ${reason}` });

function describeStatus(status: number): string | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) return `redirect (${status}) not followed: only a 2xx answer is a success`;
  return `the endpoint answered ${status}, not 2xx`;
}
