/** Identifiers and secrets: random, URL-safe, with a prefix that tells the kind of thing at a glance. */
import { createHash, randomBytes } from "node:crypto";

/** Lower-case hex, so a token is also safe as a case-insensitive email local part. */
export const randomToken = (bytes = 16) => randomBytes(bytes).toString("hex");

export const newId = (prefix: string) => `${prefix}_${randomToken(12)}`;

export const sha256Hex = (value: string | Uint8Array) => createHash("sha256").update(value).digest("hex");
