import { sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { DkimAlgorithm, DkimKeyStatus } from "../../../dkim/keys";
import { timestamps } from "./columns";

export const dkimKeys = sqliteTable("dkim_keys", {
  id: text("id").primaryKey(),
  domain: text("domain").notNull(),
  organizationId: text("organization_id"),
  selector: text("selector").notNull(),
  algorithm: text("algorithm").$type<DkimAlgorithm>().notNull(),
  privateKeyPem: text("private_key_pem").notNull(),
  publicKeyBase64: text("public_key_base64").notNull(),
  status: text("status").$type<DkimKeyStatus>().notNull(),
  ...timestamps,
});
