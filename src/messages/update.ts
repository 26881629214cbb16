/**
 * Changes to a stored message: its labels (labels.ts) and whether it was read. Received mail
 * starts unread and sent mail read (receive.ts, send.ts); nothing else marks it, so a client that
 * shows a message says so here. Like the labels, no event reports the change.
 */
import type { App } from "../app";
import { invalid, notFound } from "../errors";
import { changesLabels, labelsAfter, type LabelChange } from "./labels";
import { presentStoredMessages, type Message } from "./present";

export interface MessageChange extends LabelChange {
  read?: boolean;
}

/** The message with its labels and read state changed, in one transaction; 422 when the change names neither. */
export async function updateMessage(app: App, organizationId: string, inboxId: string, messageId: string, change: MessageChange): Promise<Message> {
  const labels = changesLabels(change);
  if (!labels && change.read === undefined) throw invalid("labels: one of labels, addLabels or removeLabels (or read) is required");
  const row = await app.store.transaction(async (tx) => {
    let message = await tx.messages.find(organizationId, inboxId, messageId);
    if (!message) throw notFound("Message not found");
    const now = app.clock.now();
    if (labels) message = (await tx.messages.setLabels(organizationId, inboxId, messageId, labelsAfter(message.labels, change), now))!;
    if (change.read !== undefined && change.read !== message.read) message = (await tx.messages.setRead(organizationId, inboxId, messageId, change.read, now))!;
    return message;
  });
  return (await presentStoredMessages(app.store, [row], app.config.deliveryRetryDelays))[0]!;
}
