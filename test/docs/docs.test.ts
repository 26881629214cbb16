/**
 * `/docs`: the API reference page, rendered from `/openapi.json` by Redoc, with every file it needs
 * served by inboxd itself: from source and from the compiled executable (assets embedded, run
 * from an empty folder), and in a real browser that is allowed no request beyond the server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../harness";
import { binaryMissing, chromiumMissing, compiledServerInEmptyFolder, launchBrowser, screenshotDir } from "../console/browser";

/** The page, and the files it refers to (all on the server: a URL with a scheme fails the test). */
async function docsPage(baseUrl: string, init: RequestInit = {}) {
  const page = await fetch(`${baseUrl}/docs`, init);
  const html = await page.clone().text();
  const linked = [...html.matchAll(/(?:src|href|spec-url)="([^"]+)"/g)].map((match) => match[1]!);
  const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((match) => match[1]!);
  return { page, html, linked, scripts };
}

async function expectServedWhole(baseUrl: string) {
  const { page, html, linked, scripts } = await docsPage(baseUrl);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toStartWith("text/html");
  expect(html).toContain('<redoc spec-url="/openapi.json"');
  // Nothing from elsewhere: no scheme, no protocol-relative URL, no inline script.
  expect(html).not.toMatch(/(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
  expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
  for (const path of linked) expect(path).toMatch(/^(\/|data:)/);
  expect(scripts).toHaveLength(1);
  const policy = page.headers.get("content-security-policy")!;
  expect(policy).toContain("default-src 'none'");
  expect(policy).toContain("script-src 'self'");
  expect(policy).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);

  const script = await fetch(baseUrl + scripts[0]);
  expect(script.status).toBe(200);
  expect(script.headers.get("content-type")).toStartWith("text/javascript");
  expect(script.headers.get("cache-control")).toContain("immutable");
  const source = await script.text();
  expect(source.length).toBeGreaterThan(500_000);
  // Checked as booleans: a failure must not print a megabyte of script.
  expect(source.includes("spec-url")).toBe(true);
  expect(source.includes("cdn.redoc.ly")).toBe(false);
  expect(/\/\/# sourceMappingURL=\S+\s*$/.test(source)).toBe(false);

  const gzipped = await fetch(baseUrl + scripts[0], { headers: { "accept-encoding": "gzip" } });
  expect(gzipped.headers.get("content-encoding")).toBe("gzip");
  const again = await fetch(`${baseUrl}/docs`, { headers: { "if-none-match": page.headers.get("etag")! } });
  expect(again.status).toBe(304);

  const unknown = await fetch(`${baseUrl}/docs/nothing.js`);
  expect(unknown.status).toBe(404);
  expect(await unknown.json()).toEqual({ error: "Not found" });

  const spec = await fetch(`${baseUrl}/openapi.json`);
  expect(spec.status).toBe(200);
  expect(((await spec.json()) as { openapi: string }).openapi).toBe("3.1.0");
  // The page itself is no API operation.
  expect(Object.keys(((await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: object }).paths)).not.toContain("/docs");
}

describe("run from source", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.cleanup();
  });

  test("/docs and its script are served by the server", async () => {
    await expectServedWhole(server.api.baseUrl);
  });
});

describe.skipIf(binaryMissing !== undefined)(`the compiled executable${binaryMissing ? ` — skipped: ${binaryMissing}` : ""}`, () => {
  const child = compiledServerInEmptyFolder();

  test("serves /docs with Redoc embedded, from an empty folder", async () => {
    await expectServedWhole(child().api.baseUrl);
  });

  test("the console links to /docs", async () => {
    const html = await (await fetch(`${child().api.baseUrl}/`)).text();
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="(\/[^"]+)"/g)].map((match) => match[1]!);
    const sources = await Promise.all(scripts.map(async (path) => (await fetch(child().api.baseUrl + path)).text()));
    expect(sources.some((source) => /href:\s*"\/docs"/.test(source))).toBe(true);
  });

  const browserMissing = chromiumMissing;
  test.skipIf(browserMissing !== undefined)(`renders the reference in a browser with nothing but the server${browserMissing ? ` — skipped: ${browserMissing}` : ""}`, async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      const origin = new URL(child().api.baseUrl).origin;
      const elsewhere: string[] = [];
      // Offline: any request that leaves the server is refused and remembered.
      await page.route("**/*", (route) => {
        const url = route.request().url();
        if (url.startsWith(origin) || url.startsWith("blob:") || url.startsWith("data:")) return route.continue();
        elsewhere.push(url);
        return route.abort();
      });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${child().api.baseUrl}/docs`);
      // Redoc's middle panel: the API's title, then a heading per operation.
      await page.getByRole("heading", { name: /^inboxd API/ }).first().waitFor({ timeout: 20_000 });
      await page.getByRole("heading", { name: /Create an inbox/ }).first().waitFor();
      await page.screenshot({ path: join(screenshotDir, "docs.png") });
      expect(elsewhere).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
