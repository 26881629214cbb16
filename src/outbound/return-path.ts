/**
 * VERP return paths (one per delivery) so that a bounce or complaint coming back
 * later names the delivery it is about, whatever the remote system did to the
 * report's body. The SMTP server accepts RCPT to these addresses without an inbox
 * and hands the DATA to processReturnedReport.
 */
import type { App } from "../app";

const PREFIX = "bounces+";
// Delivery ids are a lower-case prefix, "_", and hex (src/ids.ts).
const DELIVERY_ID = /^[a-z0-9]+_[a-z0-9]+$/;

/** The MAIL FROM of one delivery: `bounces+<deliveryId>@<INBOXD_HOSTNAME>`. */
export function returnPathFor(app: App, deliveryId: string): string {
  return `${PREFIX}${deliveryId}@${app.config.hostname}`;
}

/** The delivery id named by a return path of ours, or null for any other address. */
export function parseReturnPath(app: App, address: string): string | null {
  const at = address.lastIndexOf("@");
  if (at < 0) return null;
  const domain = address.slice(at + 1).replace(/\.$/, "").toLowerCase();
  if (domain !== app.config.hostname.toLowerCase()) return null;
  // Local parts are case-sensitive in principle (RFC 5321 §2.4), but relays fold
  // case; ids are lower case, so folding here loses nothing.
  const local = address.slice(0, at).toLowerCase();
  if (!local.startsWith(PREFIX)) return null;
  const id = local.slice(PREFIX.length);
  return DELIVERY_ID.test(id) ? id : null;
}
