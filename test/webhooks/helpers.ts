// Shared by the webhook tests: the queue of a running test server, and events written the way
// the other modules write them (in a transaction, through the store).
import type { App } from "../../src/app";
import type { EventName } from "../../src/events/names";
import type { WebhookQueue } from "../../src/webhooks/queue";
import type { TestServer } from "../harness";

export function webhookQueue(server: TestServer): WebhookQueue {
  const part = server.running.parts.find((p) => p.name === "webhooks");
  if (!part) throw new Error("the server runs no webhook queue");
  return part as WebhookQueue;
}

export function emitEvent(app: App, organizationId: string, type: EventName, payload: object, ids: { inboxId?: string; messageId?: string } = {}): Promise<string> {
  return app.store.transaction((tx) => tx.events.emit({ organizationId, type, payload, ...ids }, app.clock.now()));
}

/**
 * Events of one organization in one transaction, each emitted as emitEvent does (in order, at the
 * clock's time when it is emitted): a queue turn sees all of them or none.
 */
export function emitEvents(app: App, organizationId: string, events: { type: EventName; payload: object }[]): Promise<string[]> {
  return app.store.transaction(async (tx) => {
    const ids: string[] = [];
    for (const { type, payload } of events) ids.push(await tx.events.emit({ organizationId, type, payload }, app.clock.now()));
    return ids;
  });
}
