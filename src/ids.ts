/** Identifiers and secrets: random, URL-safe, with a prefix that tells the kind of thing at a glance. */
import { createHash, randomBytes } from "node:crypto";

/** Lower-case hex, so a token is also safe as a case-insensitive email local part. */
export const randomToken = (bytes = 16) => randomBytes(bytes).toString("hex");

const RANDOM_BITS = 48;
let lastTime = 0;
let lastRandom = 0;

/**
 * Prefix, then 12 hex digits of wall-clock milliseconds and 48 random bits (like UUIDv7): new rows
 * land at the end of every id index instead of on a random page, which halved the WAL written per
 * send in bench/api. The wall clock rather than the App's: ids order rows, they carry no meaning.
 * Within one millisecond (or when the clock steps back) the next id is the last one plus one, as
 * in ULID's monotonic mode: the ids made by one thread sort in the order they were made, so rows made
 * together (the deliveries of one send) read back in that order by id alone.
 */
export function newId(prefix: string): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    lastRandom = randomBytes(6).readUIntBE(0, 6);
  } else if (++lastRandom >= 2 ** RANDOM_BITS) {
    lastTime++;
    lastRandom = 0;
  }
  return `${prefix}_${lastTime.toString(16).padStart(12, "0")}${lastRandom.toString(16).padStart(12, "0")}`;
}

export const sha256Hex = (value: string | Uint8Array) => createHash("sha256").update(value).digest("hex");
