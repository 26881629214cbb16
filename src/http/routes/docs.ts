/**
 * The API's reference: `/openapi.json` (openapi.ts), and `/docs`, the page that renders it with
 * Redoc. Redoc's standalone script is a file of the package embedded in the executable
 * (`with { type: "file" }`: `bun build --compile` bundles it, run from source it is read from
 * node_modules), served from here under a name that carries its hash: the page loads nothing
 * from anywhere else and works offline.
 */
import { Elysia } from "elysia";
import redocScript from "redoc/bundles/redoc.standalone.js" with { type: "file" };
import type { ConsoleFile } from "../../console/bundle";
import { notFound } from "../../errors";
import { serveFile } from "./console";

/**
 * Redoc styles itself with inline `<style>` elements and runs its search in a worker made from a
 * blob; no eval, no inline script (it starts from the `<redoc>` element the script finds).
 */
const docsSecurityHeaders = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
};

const file = (body: Uint8Array<ArrayBuffer>, contentType: string): ConsoleFile => ({
  body,
  gzipped: Bun.gzipSync(body),
  contentType,
  etag: `"${Bun.hash(body).toString(36)}"`,
});

interface DocsPage {
  page: ConsoleFile;
  /** The script's URL path (`/docs/redoc-<hash>.js`). */
  scriptPath: string;
  script: ConsoleFile;
}

const escapeAttribute = (value: string) => value.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

async function loadPage(): Promise<DocsPage> {
  // Two changes keep the page from reaching out: the source map it names is not shipped (the
  // comment would only send devtools to a 404), and the logo beside "API docs by Redocly" is
  // loaded from Redocly's CDN: it becomes an empty data URL, which fails to load, and Redoc then
  // leaves the image out (the link stays).
  const source = (await Bun.file(redocScript).text())
    .replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n")
    .replaceAll('"https://cdn.redoc.ly/redoc/logo-mini.svg"', '"data:,"');
  const script = file(new TextEncoder().encode(source), "text/javascript; charset=utf-8");
  const scriptPath = `/docs/redoc-${Bun.hash(source).toString(36)}.js`;
  // Redoc's options are the element's attributes (kebab-case); its script renders the element.
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>inboxd API reference</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.json" required-props-first="true" expand-responses="200,201" path-in-middle-panel="true"></redoc>
<script src="${escapeAttribute(scriptPath)}"></script>
</body>
</html>
`;
  return { page: file(new TextEncoder().encode(html), "text/html; charset=utf-8"), scriptPath, script };
}

let loading: Promise<DocsPage> | undefined;

/** Read and compressed once per process, on the first request for the page. */
function docsPage(): Promise<DocsPage> {
  loading ??= loadPage().catch((error) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

/** `document`: the OpenAPI document as JSON text, made on the first request (every route exists by then). */
export const docsRoutes = (document: () => string) =>
  new Elysia({ detail: { hide: true } })
    .get("/openapi.json", ({ set }) => {
      set.headers["content-type"] = "application/json;charset=utf-8";
      return document();
    })
    .get("/docs", async ({ request }) => serveFile((await docsPage()).page, request, "no-cache", docsSecurityHeaders))
    .get("/docs/:asset", async ({ request, params }) => {
      const docs = await docsPage();
      if (`/docs/${params.asset}` !== docs.scriptPath) throw notFound("Not found");
      return serveFile(docs.script, request, "public, max-age=31536000, immutable", docsSecurityHeaders);
    });
