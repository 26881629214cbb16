import { pgTable, text } from "drizzle-orm/pg-core";
import { timestamps } from "./columns";
import type { DkimAlgorithm, DkimKeyStatus } from "../../../dkim/keys";
import { citext } from "./citext";

export const dkimKeys = pgTable("dkim_keys", {
  id: text("id").primaryKey(),
  domain: citext("domain").notNull(),
  organizationId: text("organization_id"),
  selector: text("selector").notNull(),
  algorithm: text("algorithm").$type<DkimAlgorithm>().notNull(),
  privateKeyPem: text("private_key_pem").notNull(),
  publicKeyBase64: text("public_key_base64").notNull(),
  status: text("status").$type<DkimKeyStatus>().notNull(),
  ...timestamps,
});
