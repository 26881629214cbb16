import { iso } from "../clock";
import { resource } from "../present";
import type { InboxRecord } from "../store";

export const presentInbox = (row: InboxRecord) =>
  resource({ id: row.id, organizationId: row.organizationId, name: row.name, email: row.email, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });

export type Inbox = ReturnType<typeof presentInbox>;
