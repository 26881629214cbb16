/**
 * Webhook endpoints as the API manages them: creation (URL and SSRF checks, the secret shown
 * once), updates, the test event, the attempts log and re-driving an event. The deliveries
 * themselves are the queue's (queue.ts).
 */
import type { App } from "../app";
import { invalid, notFound } from "../errors";
import { eventNames, testEventIdPrefix, type EventName } from "../events/names";
import { randomToken, newId } from "../ids";
import { withTotal, type Page } from "../page";
import type { Aggregates, WebhookChanges, WebhookRecord } from "../store";
import { disabledByUserReason } from "./policy";
import { presentAttempt, presentWebhook } from "./present";
import { newWebhookSecret } from "./signature";
import { isForbiddenAddress, parseHostLiteral } from "../net/address-policy";
import { checkWebhookUrl } from "./ssrf";

const maxUrlLength = 2048;
export const testEventPayload = { test: "This is a test event from inboxd" };

export interface WebhookInput {
  url: string;
  events: string[];
}

export interface WebhookUpdate {
  url?: string;
  events?: string[];
  enabled?: boolean;
}

/**
 * An organization's webhooks at most: each event goes to every one, so a few API calls could
 * otherwise queue thousands of deliveries to receivers that never answer.
 */
export const maxWebhooksPerOrganization = 50;

export async function createWebhook(app: App, organizationId: string, input: WebhookInput) {
  const url = await checkUrl(app, input.url);
  const events = checkEvents(input.events);
  const now = app.clock.now();
  const row: WebhookRecord = { id: newId("whk"), organizationId, url, events, secret: newWebhookSecret(), enabled: true, disabledReason: null, firstFailureAt: null, createdAt: now, updatedAt: now };
  await app.store.transaction(async (tx) => {
    if ((await tx.webhooks.count(organizationId)) >= maxWebhooksPerOrganization) throw invalid(`An organization may have at most ${maxWebhooksPerOrganization} webhooks: delete one first`);
    await tx.webhooks.insert(row);
  });
  return { ...presentWebhook(row), secret: row.secret };
}

export async function listWebhooks(app: App, organizationId: string, page: Page) {
  return withTotal(page, (await app.store.webhooks.list(organizationId, page.page, page.per)).map(presentWebhook), () => app.store.webhooks.count(organizationId));
}

export async function getWebhook(app: App, organizationId: string, id: string) {
  return presentWebhook(await findWebhook(app.store, organizationId, id));
}

/** `enabled: true` re-enables a disabled webhook; `enabled: false` disables it and discards its pending deliveries. */
export async function updateWebhook(app: App, organizationId: string, id: string, input: WebhookUpdate) {
  await findWebhook(app.store, organizationId, id);
  const changes: WebhookChanges = {};
  if (input.url !== undefined) changes.url = await checkUrl(app, input.url);
  if (input.events !== undefined) changes.events = checkEvents(input.events);
  const now = app.clock.now();
  const { updated, redirected } = await app.store.transaction(async (tx) => {
    const current = await findWebhook(tx, organizationId, id);
    // Re-enabling starts the 5-day count of failures again; so does another URL, whose failures
    // the old one's are not (one 503 from the new URL disabled it for 5 days of the old one's).
    if (input.enabled === true && !current.enabled) Object.assign(changes, { enabled: true, disabledReason: null, firstFailureAt: null });
    if (changes.url !== undefined && changes.url !== current.url) changes.firstFailureAt = null;
    if (input.enabled === false) await tx.webhooks.disable(current.id, disabledByUserReason, now);
    // What it no longer subscribes to goes no more, retries included (test events aside).
    if (changes.events !== undefined) await tx.webhooks.discardUnsubscribed(current.id, changes.events, now);
    const redirected = input.enabled === false || changes.events !== undefined || (changes.url !== undefined && changes.url !== current.url);
    return { updated: await tx.webhooks.update(current.id, changes, now), redirected };
  });
  // Once answered, nothing more goes where the webhook no longer sends: not even what was claimed ahead.
  if (redirected) app.queues.reconsider("webhooks", updated.id);
  return presentWebhook(updated);
}

/** Returns the deleted webhook; its queued deliveries and attempts go with it, claimed ones included. */
export async function deleteWebhook(app: App, organizationId: string, id: string) {
  const row = await findWebhook(app.store, organizationId, id);
  await app.store.webhooks.delete(row.id);
  app.queues.reconsider("webhooks", row.id);
  return presentWebhook(row);
}

/** Queues a `message.received` event with `{test: ...}` as its data for this webhook only, enabled or not. */
export async function sendTestEvent(app: App, organizationId: string, id: string) {
  const now = app.clock.now();
  // Found in the transaction that queues the event: held there, so not deleted in between.
  await app.store.transaction(async (tx) =>
    tx.webhooks.queueTestEvent((await findWebhook(tx, organizationId, id)).id, {
      id: testEventIdPrefix + randomToken(12),
      organizationId,
      type: "message.received",
      inboxId: null,
      messageId: null,
      payload: JSON.stringify(testEventPayload),
      createdAt: now,
    }),
  );
  // Written beside the events' path, which wakes the queue at each commit: it slept up to a second.
  app.queues.wake("webhooks");
  return { success: true };
}

export async function listAttempts(app: App, organizationId: string, id: string, page: Page) {
  const row = await findWebhook(app.store, organizationId, id);
  return withTotal(page, (await app.store.webhooks.listAttempts(row.id, page.page, page.per)).map(presentAttempt), () => app.store.webhooks.countAttempts(row.id));
}

/**
 * Sends the attempt's event again now, with the same event id: a delivery still being retried
 * has its next try brought forward; a finished one (failed or not) is queued as a new delivery.
 */
export async function retryAttempt(app: App, organizationId: string, id: string, attemptId: string) {
  const now = app.clock.now();
  await app.store.transaction(async (tx) => {
    const row = await findWebhook(tx, organizationId, id);
    const found = await tx.webhooks.findAttempt(row.id, attemptId);
    if (!found) throw notFound("Webhook attempt not found");
    if (!found.event.id.startsWith(testEventIdPrefix) && !row.events.includes(found.event.type as EventName)) {
      throw invalid(`The webhook no longer subscribes to ${found.event.type}: add it to its events to send this attempt's event again`);
    }
    const delivery = (await tx.webhooks.findDelivery(found.attempt.deliveryId))!;
    if (delivery.status === "pending") await tx.webhooks.makeDue(delivery.id, now);
    else await tx.webhooks.queueDelivery(row.id, found.event.id, now);
  });
  app.queues.wake("webhooks");
  return { success: true };
}

async function findWebhook(store: Aggregates, organizationId: string, id: string): Promise<WebhookRecord> {
  const row = await store.webhooks.find(organizationId, id);
  if (!row) throw notFound("Webhook not found");
  return row;
}

/** docs/api.md "Webhooks": https, and no host that is or resolves to a private address, unless INBOXD_WEBHOOK_ALLOW_PRIVATE. */
async function checkUrl(app: App, url: string): Promise<string> {
  if (url.length > maxUrlLength) throw invalid(`url must be at most ${maxUrlLength} characters`);
  // The URL parser forgives what an absolute URL (RFC 3986 §4.3) is not: it drops tabs and line
  // breaks anywhere, trims spaces, and reads `https:///x` or `https:\\x` as https://x/. Refused, so
  // that the URL stored and shown is the one called.
  // C1 controls and the Unicode line separators are control characters too (NEL, U+0085, a line break).
  if (/[\x00-\x20\x7f-\x9f\u2028\u2029]/.test(url) || !/^[a-z][a-z\d+.-]*:\/\/[^/\\]/i.test(url)) throw invalid("url must be an absolute URL, without spaces or control characters");
  const check = checkWebhookUrl(url, app.config.webhookAllowPrivate);
  if (!check.ok) throw invalid(check.reason);
  const host = check.url.hostname;
  if (app.config.webhookAllowPrivate || parseHostLiteral(host) !== null) return url;
  // A name that does not resolve (yet) is accepted: every delivery resolves and checks it again.
  // Each family's answer is checked on its own: the name's own server can fail one family's
  // query at will, which would hide the other's private address.
  const answers = await Promise.allSettled([app.resolver.a(host), app.resolver.aaaa(host)]);
  const addresses = answers.flatMap((answer) => (answer.status === "fulfilled" ? answer.value : []));
  const forbidden = addresses.filter(isForbiddenAddress);
  if (forbidden.length > 0) throw invalid(`url host ${host} resolves to a private, loopback, link-local or reserved address (${forbidden.join(", ")})`);
  return url;
}

/** At least one of the nine names; duplicates removed, order kept. */
function checkEvents(events: string[]): EventName[] {
  const unique = [...new Set(events)];
  if (unique.length === 0) throw invalid("events must name at least one event");
  const unknown = unique.filter((name) => !(eventNames as readonly string[]).includes(name));
  if (unknown.length > 0) throw invalid(`events: unknown event ${unknown.map((name) => `'${name}'`).join(", ")} (expected ${eventNames.join(", ")})`);
  return unique as EventName[];
}
