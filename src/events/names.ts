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

/**
 * The test endpoint's events carry this id prefix, which tells them apart from the events of real
 * changes: they go to one webhook, never to the event stream. It sorts after every id newId makes
 * (`evt_` and hex digits), so readers in id order bound their range below it.
 */
export const testEventIdPrefix = "evt_test_";
