import { iso } from "../clock";
import { resource } from "../present";
import type { InboxRow } from "../store/sqlite/inboxes";

export const presentInbox = (row: InboxRow) =>
  resource({ id: row.id, organizationId: row.organizationId, name: row.name, email: row.email, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });

export type Inbox = ReturnType<typeof presentInbox>;
