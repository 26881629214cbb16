import { sqliteTable, text } from "drizzle-orm/sqlite-core";
import { timestamps } from "./columns";

export const dkimKeys = sqliteTable("dkim_keys", {
  id: text("id").primaryKey(),
  domain: text("domain").notNull(),
  organizationId: text("organization_id"),
  selector: text("selector").notNull(),
  algorithm: text("algorithm").$type<"rsa-sha256" | "ed25519-sha256">().notNull(),
  privateKeyPem: text("private_key_pem").notNull(),
  publicKeyBase64: text("public_key_base64").notNull(),
  status: text("status").$type<"active" | "pending" | "retired">().notNull(),
  ...timestamps,
});
