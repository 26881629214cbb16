import { integer, pgTable, text } from "drizzle-orm/pg-core";
import { millis, timestamps } from "./columns";
import { citext } from "./citext";

export const acmeAccounts = pgTable("acme_accounts", {
  directoryUrl: text("directory_url").primaryKey(),
  email: text("email").notNull(),
  privateKeyPem: text("private_key_pem").notNull(),
  accountUrl: text("account_url"),
  ...timestamps,
});

export const tlsCertificates = pgTable("tls_certificates", {
  name: citext("name").primaryKey(),
  certificatePem: text("certificate_pem"),
  privateKeyPem: text("private_key_pem"),
  notBefore: millis("not_before"),
  notAfter: millis("not_after"),
  failures: integer("failures").notNull().default(0),
  lastError: text("last_error"),
  nextAttemptAt: millis("next_attempt_at").notNull(),
  ...timestamps,
});

export const acmeChallenges = pgTable("acme_challenges", {
  token: text("token").primaryKey(),
  keyAuthorization: text("key_authorization").notNull(),
  expiresAt: millis("expires_at").notNull(),
});
