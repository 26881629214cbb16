import { blob, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    organizationId: text("organization_id").notNull(),
    key: text("idempotency_key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    statusCode: integer("status_code"),
    responseBody: blob("response_body", { mode: "buffer" }),
    blobId: text("blob_id"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    inboxId: text("inbox_id"),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.key] })],
);
