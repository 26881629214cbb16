import { integer } from "drizzle-orm/sqlite-core";

/** Milliseconds since the epoch; rendered as ISO 8601 by the HTTP layer. */
export const timestamps = {
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
};
