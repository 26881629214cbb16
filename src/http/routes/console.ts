/**
 * The web console: its page at `/` and the page's hashed scripts and styles at `/<name>`, with
 * security headers. Unknown names fall through to the ordinary `{error: "Not found"}`, so API
 * paths and their 404s are untouched.
 */
import { Elysia } from "elysia";
import { consoleBundle, type ConsoleFile } from "../../console/bundle";
import { notFound } from "../../errors";

/**
 * No inline script anywhere. Message HTML is shown in a sandboxed `srcdoc` iframe, which inherits
 * this policy on top of its own stricter one: hence inline styles (mail is styled inline) and
 * remote images (shown only once the reader allows them, by the iframe's own policy). A PDF
 * attachment's preview is a `blob:` frame, sandboxed too (message-view.tsx).
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self' data:",
  "frame-src blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export const consoleSecurityHeaders = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
};

/** A file held in memory, gzipped when the client takes it, 304 when its ETag is the client's. */
export function serveFile(file: ConsoleFile, request: Request, cacheControl: string, securityHeaders: Record<string, string> = consoleSecurityHeaders): Response {
  const headers: Record<string, string> = { ...securityHeaders, "content-type": file.contentType, etag: file.etag, "cache-control": cacheControl, vary: "Accept-Encoding" };
  if (request.headers.get("if-none-match") === file.etag) return new Response(null, { status: 304, headers });
  if (!/\bgzip\b/i.test(request.headers.get("accept-encoding") ?? "")) return new Response(file.body, { headers });
  return new Response(file.gzipped, { headers: { ...headers, "content-encoding": "gzip" } });
}

export const consoleRoutes = () =>
  new Elysia({ detail: { hide: true } })
    // The page always revalidates, so a new version's asset names are picked up at once.
    .get("/", async ({ request }) => serveFile((await consoleBundle()).index, request, "no-cache"))
    .get("/:asset", async ({ request, params }) => {
      const file = (await consoleBundle()).assets.get(`/${params.asset}`);
      if (!file) throw notFound("Not found");
      return serveFile(file, request, "public, max-age=31536000, immutable");
    });
