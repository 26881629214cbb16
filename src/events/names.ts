/** The nine event names of the service description; webhooks subscribe to a subset. */
export const eventNames = [
  "inbox.created",
  "inbox.deleted",
  "inbox.updated",
  "message.sent",
  "message.received",
  "message.delivered",
  "message.bounced",
  "message.complained",
  "message.rejected",
] as const;

export type EventName = (typeof eventNames)[number];
