/**
 * Hostile mail in a real Chromium against a server in this process (its console built from
 * source): opening a message connects nowhere, "Show images" lets only images through, and an
 * HTML attachment is a download that never runs at the console's origin.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { eventually, register, startTestServer, type Registered, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";
import { chromiumMissing, launchBrowser, signedInPage, type Browser } from "./browser";

const stepTimeout = 30_000;
/** After the frame's load event: time for any late fetch (CSS backgrounds, media) to reach the listener. */
const graceMs = 750;

/** A loopback HTTP server that counts every TCP connection (a preconnect leaks as much as a request) and records each request's path. */
interface Tracker {
  url(path: string): string;
  connections: number;
  paths: string[];
  close(): Promise<void>;
}

const gif = Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64");

async function startTracker(): Promise<Tracker> {
  const tracker = { connections: 0, paths: [] as string[] };
  const server: Server = createServer((request, response) => {
    tracker.paths.push(request.url ?? "");
    if (request.url?.startsWith("/image/")) response.writeHead(200, { "content-type": "image/gif" }).end(gif);
    else response.writeHead(200, { "content-type": "text/html" }).end("<p>remote</p>");
  });
  server.on("connection", () => tracker.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(tracker, {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

let server: TestServer;
let browser: Browser;
let page: Page;
let tracker: Tracker;
let account: Registered;

/** A multipart/mixed message; each part base64-encoded, with its own extra header fields. */
function rawMessage(subject: string, parts: { type: string; body: string | Buffer; headers?: string[] }[]): string {
  const lines = ["From: Mallory <mallory@sender.test>", `To: ${account.inbox.email}`, `Subject: ${subject}`, `Message-ID: <${crypto.randomUUID()}@sender.test>`, `Date: ${new Date().toUTCString()}`, "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="part"', ""];
  for (const part of parts) {
    lines.push("--part", `Content-Type: ${part.type}`, ...(part.headers ?? []), "Content-Transfer-Encoding: base64", "", Buffer.from(part.body).toString("base64"));
  }
  lines.push("--part--", "");
  return lines.join("\r\n");
}

/** Delivers over SMTP and opens the message in the console. */
async function openReceived(subject: string, parts: Parameters<typeof rawMessage>[1]) {
  await sendMail(server.smtpPort, { from: "mallory@sender.test", to: [account.inbox.email], raw: rawMessage(subject, parts) });
  const list = await eventually(
    "the message is stored",
    async () => (await server.api.get(`/v1/inboxes/${account.inbox.id}/messages?query=${encodeURIComponent(subject)}`, account.apiKey.key)).body,
    (body) => Array.isArray(body) && body.length === 1,
  );
  await page.goto(`${server.api.baseUrl}/#/inboxes/${account.inbox.id}/messages/${list[0].id}`);
  await page.getByRole("article", { name: subject }).waitFor();
  return list[0].id as string;
}

/** Waits for the message frame's load event (it waits for the frame's images, frames and objects), then a grace period. */
async function settled() {
  const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
  await frame?.waitForLoadState("load");
  await Bun.sleep(graceMs);
}

beforeAll(async () => {
  if (chromiumMissing) return;
  [server, browser, tracker] = await Promise.all([startTestServer(), launchBrowser(), startTracker()]);
  account = await register(server.api);
  page = await signedInPage(browser, server.api.baseUrl, account);
}, stepTimeout);

afterAll(async () => {
  await browser?.close();
  await server?.cleanup();
  await tracker?.close();
}, stepTimeout);

describe.skipIf(chromiumMissing !== undefined)(`hostile mail in Chromium${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ""}`, () => {
  test("opening a message makes no connection to any remote host; Show images lets only images load", async () => {
    const t = (path: string) => tracker.url(path);
    const html = `<!doctype html><html><head>
<base href="${t("/other/base/")}">
<meta http-equiv="refresh" content="0;url=${t("/other/refresh")}">
<link rel="stylesheet" href="${t("/other/link.css")}"><link rel="preconnect" href="${t("/")}"><link rel="prefetch" href="${t("/other/prefetch")}"><link rel="icon" href="${t("/other/icon")}">
<style>@import url("${t("/other/import.css")}"); @import "${t("/other/import-string.css")}"; @font-face { font-family: F; src: url(${t("/other/font.woff")}) } .bg { background: url(${t("/image/style-bg.gif")}) } .escaped { background-image: u\\72l(${t("/image/escaped-bg.gif")}) }</style>
</head><body background="${t("/image/body-bg.gif")}">
<p>Hello there</p>
<iframe src="${t("/other/iframe")}"></iframe>
<iframe srcdoc="&lt;img src=&quot;${t("/other/nested")}&quot;&gt;"></iframe>
<object data="${t("/other/object")}" type="text/html"></object>
<embed src="${t("/other/embed")}" type="text/html">
<img src="${t("/image/img.gif")}" alt="pixel">
<img srcset="${t("/image/srcset.gif")} 1x" alt="srcset">
<picture><source srcset="${t("/image/picture.gif")}"><img alt="picture"></picture>
<video poster="${t("/image/poster.gif")}" src="${t("/other/video.mp4")}" autoplay></video>
<video autoplay><source src="${t("/other/source.mp4")}"><track src="${t("/other/track.vtt")}"></video>
<audio src="${t("/other/audio.mp3")}" autoplay></audio>
<table background="${t("/image/table-bg.gif")}"><tr><td class="bg">cell</td><td class="escaped">escaped</td></tr></table>
<div style="background: url('${t("/image/inline-bg.gif")}')">styled</div>
<div style="background-image: image-set(&quot;${t("/image/image-set.gif")}&quot; 1x)">image-set</div>
<div style="--bg: url(${t("/image/custom.gif")}); background-image: var(--unset, url(${t("/image/var-fallback.gif")}))">var</div>
<img src="${t("/image/protocol-relative.gif").replace("http:", "")}" alt="protocol-relative">
<a href="${t("/other/link")}" ping="${t("/other/ping")}">a link</a>
<form action="${t("/other/form")}"><input type="image" src="${t("/image/input.gif")}" alt="go"></form>
<svg width="10" height="10"><image href="${t("/image/svg.gif")}" width="10" height="10"/><use href="${t("/other/use.svg#x")}"/></svg>
<link rel="stylesheet" href="${t("/other/body-link.css")}">
</body></html>`;
    await openReceived("Remote loads", [{ type: "text/html; charset=utf-8", body: html }]);
    await page.frameLocator("iframe").getByText("Hello there").waitFor();
    await settled();
    expect(tracker.paths).toEqual([]);
    expect(tracker.connections).toBe(0);
    expect(await page.locator(".html-body iframe").getAttribute("sandbox")).not.toContain("allow-same-origin");

    await page.getByRole("button", { name: "Show images" }).click();
    await eventually("the plain image and the styled backgrounds load", () => tracker.paths, (paths) => ["/image/img.gif", "/image/inline-bg.gif", "/image/style-bg.gif"].every((path) => paths.includes(path)));
    await settled();
    expect(tracker.paths.filter((path) => !path.startsWith("/image/"))).toEqual([]);
  }, stepTimeout);

  test("an inline image (cid:) from the message itself shows without Show images", async () => {
    await openReceived("Inline image", [
      { type: "text/html; charset=utf-8", body: `<p>Logo below</p><img src="cid:logo@sender.test" alt="logo">` },
      { type: "image/gif", headers: ['Content-Disposition: inline; filename="logo.gif"', "Content-ID: <logo@sender.test>"], body: gif },
    ]);
    const logo = page.frameLocator("iframe").getByRole("img", { name: "logo" });
    await logo.waitFor();
    expect(await logo.evaluate((image: { complete: boolean; naturalWidth: number }) => image.complete && image.naturalWidth)).toBe(1);
    expect(await page.getByRole("button", { name: "Show images" }).count()).toBe(0);
  }, stepTimeout);

  test("an HTML attachment is downloaded and never runs at the console's origin", async () => {
    const script = `<!doctype html><p>attached page</p><script>localStorage.setItem("attachment-script", "ran"); document.title = "attachment ran";</script>`;
    await openReceived("Page attached", [
      { type: "text/plain; charset=utf-8", body: "See the page." },
      { type: 'text/html; charset=utf-8; name="page.html"', headers: ['Content-Disposition: attachment; filename="page.html"'], body: script },
    ]);
    const link = page.getByRole("link", { name: "page.html" });
    const download = page.waitForEvent("download");
    await link.click();
    const file = await download;
    expect(file.suggestedFilename()).toBe("page.html");
    expect(await Bun.file((await file.path())!).text()).toBe(script);

    // Opened the way a reader opens a link in a new tab: it must download, not render.
    const href = (await link.getAttribute("href"))!;
    const tab = await browser.context.newPage();
    const opened = tab.waitForEvent("download", { timeout: 5000 }).then(
      () => "download",
      () => "no download",
    );
    await tab.goto(href).catch(() => undefined);
    expect(await opened).toBe("download");
    expect(await tab.title()).not.toBe("attachment ran");
    await tab.close();
    expect(await page.evaluate(() => localStorage.getItem("attachment-script"))).toBeNull();
  }, stepTimeout);
});
