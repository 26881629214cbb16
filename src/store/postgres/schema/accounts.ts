import { integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { millis, timestamps } from "./columns";

export const users = pgTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull(),
  firstName: text("first_name").notNull(),
  lastName: text("last_name").notNull(),
  passwordHash: text("password_hash").notNull(),
  ...timestamps,
});

export const organizations = pgTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  ...timestamps,
});

export const memberships = pgTable(
  "memberships",
  {
    userId: text("user_id").notNull(),
    organizationId: text("organization_id").notNull(),
    role: text("role").notNull(),
    createdAt: millis("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.organizationId] })],
);

export const accessTokens = pgTable("access_tokens", {
  tokenHash: text("token_hash").primaryKey(),
  userId: text("user_id").notNull(),
  expiresAt: millis("expires_at").notNull(),
  createdAt: millis("created_at").notNull(),
});

export const apiKeys = pgTable("api_keys", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  name: text("name").notNull(),
  prefix: text("prefix").notNull(),
  keyHash: text("key_hash").notNull(),
  createdAt: millis("created_at").notNull(),
  lastUsedAt: millis("last_used_at"),
});

export const loginThrottles = pgTable("login_throttles", {
  subject: text("subject").primaryKey(),
  windowStart: millis("window_start").notNull(),
  attempts: integer("attempts").notNull(),
  previousAttempts: integer("previous_attempts").notNull().default(0),
  lockedUntil: millis("locked_until"),
  expiresAt: millis("expires_at").notNull(),
});

export const secretBox = pgTable("secret_box", {
  id: integer("id").primaryKey(),
  probe: text("probe").notNull(),
  sealedAt: millis("sealed_at").notNull(),
});
