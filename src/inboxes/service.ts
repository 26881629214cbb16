/** Inbox rules in one place: addresses, uniqueness, and the events inbox changes emit. */
import type { App } from "../app";
import { conflict } from "../errors";
import { newId, randomToken } from "../ids";
import { presentInbox } from "./present";

/** A random, unguessable local part (80 bits) on the service's own mail domain. */
export const randomInboxAddress = (mailDomain: string) => `${randomToken(10)}@${mailDomain.toLowerCase()}`;

/** Creates the inbox and its `inbox.created` event; call inside a transaction when composing. */
export function insertInbox(app: App, organizationId: string, input: { name?: string; email: string }) {
  if (app.store.inboxes.findByEmail(input.email)) throw conflict("Email address already in use");
  const now = app.clock.now();
  const row = { id: newId("inb"), organizationId, name: input.name ?? null, email: input.email.toLowerCase(), createdAt: now, updatedAt: now };
  app.store.inboxes.insert(row);
  const inbox = presentInbox(row);
  app.store.events.emit({ organizationId, type: "inbox.created", inboxId: row.id, payload: inbox }, now);
  return inbox;
}
