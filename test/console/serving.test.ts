/**
 * How the console is served: from the compiled executable started in an empty folder, and from
 * source; security headers; the API's own paths and 404s untouched; the initial page's size.
 */
import { describe, expect, test } from "bun:test";
import { consoleSecurityHeaders } from "../../src/http/routes/console";
import { startTestServer } from "../harness";
import { binaryMissing, compiledServerInEmptyFolder } from "./browser";

const initialPageBudget = 60 * 1024;

/** The page and every file it links to (scripts, styles, icon): what a first visit downloads. */
async function initialPage(baseUrl: string, init: RequestInit = {}) {
  const page = await fetch(`${baseUrl}/`, init);
  const html = await page.clone().text();
  const linked = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]!);
  const assets = await Promise.all(linked.map((path) => fetch(baseUrl + path, init)));
  return { page, html, linked, assets };
}

/** Bytes on the wire: fetch decompresses, so the gzip size is read from Content-Length. */
const wireSize = (response: Response) => Number(response.headers.get("content-length"));

const expectSecurityHeaders = (response: Response) => {
  for (const [name, value] of Object.entries(consoleSecurityHeaders)) expect(response.headers.get(name)).toBe(value);
  const policy = response.headers.get("content-security-policy")!;
  expect(policy).toContain("frame-ancestors 'none'");
  expect(policy).toContain("script-src 'self'");
  expect(policy).not.toMatch(/script-src[^;]*'unsafe-inline'/);
};

describe.skipIf(binaryMissing !== undefined)(`the compiled executable serves the console${binaryMissing ? ` — skipped: ${binaryMissing}` : ""}`, () => {
  const child = compiledServerInEmptyFolder();

  test("/ is the console page, with its scripts and styles, from an empty folder", async () => {
    const { page, html, linked, assets } = await initialPage(child().api.baseUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    expect(html).toContain('<div id="app">');
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(linked.some((path) => path.endsWith(".js"))).toBe(true);
    expect(linked.some((path) => path.endsWith(".css"))).toBe(true);
    for (const asset of assets) {
      expect(asset.status).toBe(200);
      expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
      expect(asset.headers.get("cache-control")).toContain("immutable");
    }
  });

  test("console responses carry the security headers", async () => {
    const { page, assets } = await initialPage(child().api.baseUrl);
    expectSecurityHeaders(page);
    for (const asset of assets) expectSecurityHeaders(asset);
  });

  test(`the initial page is under ${initialPageBudget / 1024} kB gzipped`, async () => {
    const { page, linked, assets } = await initialPage(child().api.baseUrl, { headers: { "accept-encoding": "gzip" } });
    const responses = [page, ...assets];
    for (const response of responses) expect(response.headers.get("content-encoding")).toBe("gzip");
    const total = responses.reduce((sum, response) => sum + wireSize(response), 0);
    console.log(`initial page, gzipped: ${(total / 1024).toFixed(1)} kB in ${responses.length} files (/, ${linked.join(", ")})`);
    expect(total).toBeLessThan(initialPageBudget);
  });

  test("a revalidation of the page is a 304", async () => {
    const first = await fetch(`${child().api.baseUrl}/`);
    const again = await fetch(`${child().api.baseUrl}/`, { headers: { "if-none-match": first.headers.get("etag")! } });
    expect(again.status).toBe(304);
  });

  test("API paths keep their answers and unknown paths their JSON 404", async () => {
    expect((await child().api.get("/health")).body.healthy).toBe(true);
    expect((await child().api.get("/openapi.json")).body.openapi).toStartWith("3.");
    for (const path of ["/nope.js", "/v1", "/v1/nothing", "/auth", "/no/such/path"]) {
      const res = await child().api.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "Not found" });
    }
    expect((await child().api.get("/v1/inboxes")).status).toBe(401);
    const openapi = await child().api.get("/openapi.json");
    expect(Object.keys(openapi.body.paths).filter((path) => !/^\/(v1|auth|organizations|health|metrics)\b/.test(path))).toEqual([]);
  });
});

describe("run from source", () => {
  test("the console is bundled on first use and served with the same headers", async () => {
    const server = await startTestServer();
    try {
      const { page, html, assets } = await initialPage(server.api.baseUrl);
      expect(page.status).toBe(200);
      expect(html).toContain('<div id="app">');
      expectSecurityHeaders(page);
      for (const asset of assets) expect(asset.status).toBe(200);
    } finally {
      await server.cleanup();
    }
  });
});
