/**
 * VERP return paths (one per delivery) so that a bounce or complaint coming back
 * later names the delivery it is about, whatever the remote system did to the
 * report's body. The SMTP server accepts RCPT to these addresses without an inbox
 * and hands the DATA to processReturnedReport.
 *
 * The address carries a tag of the delivery id under the installation's secret key: only the
 * mail system a delivery went to learns its return path. Delivery ids alone are guessable (those
 * of one message are made together, one apart), and a forged report to a neighbour's id bounced
 * and suppressed another recipient of the message, a Bcc recipient elsewhere among them.
 */
import { timingSafeEqual } from "node:crypto";
import type { App } from "../app";

/** The local part of every return path, before its "+": no inbox may take it at INBOXD_HOSTNAME (src/inboxes/operator-addresses.ts). */
export const RETURN_PATH_LOCAL_PART = "bounces";
const PREFIX = `${RETURN_PATH_LOCAL_PART}+`;
/** 80 bits: a tag cannot be guessed over SMTP, and the local part stays within RFC 5321 §4.5.3.1.1's 64 octets. */
const TAG_HEX_DIGITS = 20;
// Delivery ids are a lower-case prefix, "_", and hex (src/ids.ts); the tag is hex.
const TAGGED_DELIVERY_ID = new RegExp(`^([a-z0-9]+_[a-z0-9]+)-([0-9a-f]{${TAG_HEX_DIGITS}})$`);

const tagOf = (app: App, deliveryId: string) => app.store.tag("return path", deliveryId).slice(0, TAG_HEX_DIGITS);

/** The MAIL FROM of one delivery: `bounces+<deliveryId>-<tag>@<INBOXD_HOSTNAME>`. */
export function returnPathFor(app: App, deliveryId: string): string {
  return `${PREFIX}${deliveryId}-${tagOf(app, deliveryId)}@${app.config.hostname}`;
}

/**
 * An address of our return paths' form: `deliveryId` is the delivery it names when its tag is
 * right, else null (guessed, or damaged on the way). Null for any other address.
 */
export function parseReturnPath(app: App, address: string): { deliveryId: string | null } | null {
  const at = address.lastIndexOf("@");
  if (at < 0) return null;
  const domain = address.slice(at + 1).replace(/\.$/, "").toLowerCase();
  if (domain !== app.config.hostname.toLowerCase()) return null;
  // Local parts are case-sensitive in principle (RFC 5321 §2.4), but relays fold
  // case; ids and tags are lower case, so folding here loses nothing.
  const local = address.slice(0, at).toLowerCase();
  if (!local.startsWith(PREFIX)) return null;
  const [, deliveryId, tag] = TAGGED_DELIVERY_ID.exec(local.slice(PREFIX.length)) ?? [];
  if (!deliveryId || !tag) return { deliveryId: null };
  return { deliveryId: timingSafeEqual(Buffer.from(tag), Buffer.from(tagOf(app, deliveryId))) ? deliveryId : null };
}
