import { bigint, customType } from "drizzle-orm/pg-core";

/** Milliseconds since the epoch, as the records have them (bigint, read as a number). */
export const millis = (name: string) => bigint(name, { mode: "number" });

/** Milliseconds since the epoch; rendered as ISO 8601 by the HTTP layer. */
export const timestamps = {
  createdAt: millis("created_at").notNull(),
  updatedAt: millis("updated_at").notNull(),
};

/**
 * A jsonb column whose value goes to the driver as it is: Bun.sql encodes a jsonb parameter
 * itself, so drizzle's own jsonb (which passes JSON text) would store a JSON string.
 */
export const jsonb = <T>(name: string) => customType<{ data: T; driverData: T }>({ dataType: () => "jsonb" })(name);

/** Bytes (bytea), as Buffers both ways. */
export const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });
