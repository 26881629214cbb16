/**
 * The URL of a request as Bun gives it: absolute when the request names a usable Host, else only
 * its path (HTTP/1.0 without Host, an empty Host, `a b`, `x@y`) or a URL no parser takes
 * (`a%00b`). Every listener reads it through here, so that such a request gets a 400, never the
 * exception of `new URL` (a 500 and, with Bun's development default, its error page).
 */
export function requestUrl(request: Request): URL | undefined {
  const url = hasOneHost(request) ? URL.parse(request.url) : null;
  return url && !tooShortForTheRouter(url) ? url : undefined;
}

/**
 * Elysia's router looks for the path's `/` from the URL's 12th character on (its
 * `standardHostname`, which saves a search per request): under a Host of 1 to 3 characters (2 on
 * HTTPS), it took the path's first segment for part of the host, and `/x/v1/inboxes` reached
 * `/v1/inboxes`. Such a Host (a single-label name such as `api` behind a proxy) is refused rather
 * than misrouted; the router's option to search from the 8th character misreads every https:// URL.
 */
const tooShortForTheRouter = (url: URL) => url.protocol.length + "//".length + url.host.length < "https://a.b".length;

/**
 * RFC 9112 §3.2: more than one Host field is a 400. Bun joins repeated fields with ", " and builds
 * the URL from the first; a proxy before it may take the last. No host and port holds a comma.
 */
const hasOneHost = (request: Request) => !request.headers.get("host")?.includes(",");

/** RFC 9112 §3.2: the answer to a request without a Host, or with one that names no host. */
export const BAD_HOST = "The Host header is missing or malformed";

/** The 400 of a listener that is not the API, in the API's words. */
export const badHostResponse = () => Response.json({ error: BAD_HOST }, { status: 400 });
