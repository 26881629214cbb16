import { customType } from "drizzle-orm/pg-core";

/** Text compared and ordered without regard to case (the citext extension): SQLite's COLLATE NOCASE. */
export const citext = customType<{ data: string }>({ dataType: () => "citext" });
