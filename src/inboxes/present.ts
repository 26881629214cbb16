import { iso } from "../clock";
import { resource } from "../present";
import type { InboxCountsRecord, InboxRecord } from "../store";

export const presentInbox = (row: InboxRecord) =>
  resource({ id: row.id, organizationId: row.organizationId, name: row.name, email: row.email, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });

export type Inbox = ReturnType<typeof presentInbox>;

/** As the inbox list and get show it: with its message and unread totals. */
export const presentInboxWithCounts = (row: InboxRecord, counts: InboxCountsRecord | undefined) => ({
  ...presentInbox(row),
  messageCount: counts?.messageCount ?? 0,
  unreadCount: counts?.unreadCount ?? 0,
});

export type InboxWithCounts = ReturnType<typeof presentInboxWithCounts>;
