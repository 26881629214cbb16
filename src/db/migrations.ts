/** The numbered SQL migrations, embedded in the executable as text. Append new files here in order. */
import core from "../../migrations/0001_core.sql" with { type: "text" };

export const migrations: { version: string; sql: string }[] = [
  { version: "0001_core", sql: core },
];
