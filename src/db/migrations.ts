/** The numbered SQL migrations, embedded in the executable as text. Append new files here in order. */
import core from "../../migrations/0001_core.sql" with { type: "text" };
import dkimKeys from "../../migrations/0020_dkim_keys.sql" with { type: "text" };
import loginThrottles from "../../migrations/0030_login_throttles.sql" with { type: "text" };

export const migrations: { version: string; sql: string }[] = [
  { version: "0001_core", sql: core },
  { version: "0020_dkim_keys", sql: dkimKeys },
  { version: "0030_login_throttles", sql: loginThrottles },
];
