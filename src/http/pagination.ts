/**
 * The `page` and `per` query of every list (docs/api.md "Lists"): defaults 1 and 20, `per` at most
 * 100, out-of-range values 422. Checked as digit patterns rather than t.Integer: Elysia's integer
 * coercion reports a range error without the field's name, and the error must name it. The checked
 * text becomes a Page with pageOf (src/page.ts).
 *
 * A list's body stays a bare array (existing clients read it as one); the page's neighbours and
 * the list's size go in headers: RFC 8288 `Link` with `next`, `prev`, `first` and `last`, and
 * `X-Total-Count` (both exposed to browsers by the CORS setup, src/http/app.ts).
 */
import { t } from "elysia";
import type { App } from "../app";
import type { Listing } from "../page";
import { trustedProxies } from "./client-address";

export const paginationQuery = t.Object({
  page: t.Optional(t.String({ pattern: "^[1-9][0-9]{0,8}$", error: "must be a whole number from 1 to 999999999", description: "default 1" })),
  per: t.Optional(t.String({ pattern: "^([1-9]|[1-9][0-9]|100)$", error: "must be a whole number from 1 to 100", description: "default 20" })),
});

/** The headers a list adds, for CORS to expose. */
export const listHeaders = ["Link", "X-Total-Count"];

/** What of a route's context a list needs to write its headers. */
export interface ListContext {
  request: Request;
  set: { headers: Record<string, string | number> };
  server: { requestIP(request: Request): { address: string } | null } | null;
}

/**
 * The listing's items, for the body, after writing its headers. Each link is absolute, the
 * request's own URL with only `page` changed, so `per`, `query` and any other parameter carry
 * over as the client wrote them. `next` only when a page follows; `prev` from page 2 on (past the
 * end, the last page); `first` always; `last` and `X-Total-Count` when the total is known.
 */
export function paged<T>(app: App, { request, set, server }: ListContext, { page, items, total, hasNext }: Listing<T>): T[] {
  const url = publicUrl(app, request, server);
  const last = total === undefined ? undefined : Math.max(1, Math.ceil(total / page.per));
  const links: string[] = [];
  const link = (to: number, rel: string) => links.push(`<${pageUrl(url, to)}>; rel="${rel}"`);
  if (hasNext) link(page.page + 1, "next");
  if (page.page > 1) link(last === undefined ? page.page - 1 : Math.min(page.page - 1, last), "prev");
  link(1, "first");
  if (last !== undefined) link(last, "last");
  set.headers.link = links.join(", ");
  if (total !== undefined) set.headers["x-total-count"] = String(total);
  return items;
}

/** The URL with `page` set to `to`, in place of the first `page` parameter or last; every other parameter as it was written. */
function pageUrl(url: URL, to: number): string {
  const kept: string[] = [];
  let placed = false;
  for (const pair of url.search.slice(1).split("&")) {
    if (pair === "") continue;
    if (parameterName(pair) !== "page") kept.push(pair);
    else if (!placed) {
      kept.push(`page=${to}`);
      placed = true;
    }
  }
  if (!placed) kept.push(`page=${to}`);
  return `${url.origin}${url.pathname}?${kept.join("&")}`;
}

function parameterName(pair: string): string {
  const name = pair.split("=", 1)[0]!.replaceAll("+", " ");
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * The URL the client asked for: the request's, or behind one of INBOXD_TRUSTED_PROXIES (TLS
 * termination), with the scheme and host the proxy says the client used (the first of
 * X-Forwarded-Proto and X-Forwarded-Host), so that links lead back through the proxy.
 */
function publicUrl(app: App, request: Request, server: ListContext["server"]): URL {
  const url = new URL(request.url);
  if (app.config.trustedProxies.length === 0) return url;
  // Parsed per request, and only where proxies are configured: a few ranges, no state kept.
  const peer = server?.requestIP(request)?.address;
  if (!peer || !trustedProxies(app.config.trustedProxies)(peer)) return url;
  const first = (header: string) => request.headers.get(header)?.split(",")[0]!.trim().toLowerCase();
  const proto = first("x-forwarded-proto");
  const host = first("x-forwarded-host");
  const scheme = proto === "https" || proto === "http" ? proto : url.protocol.slice(0, -1);
  const authority = host && /^[a-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$/.test(host) ? host : url.host;
  // Built anew: assigning `host` keeps the old port when the new one has none.
  return new URL(`${scheme}://${authority}${url.pathname}${url.search}`);
}
