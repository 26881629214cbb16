/**
 * A real Chromium (Debian's package) driven by playwright-core, for the web console's tests, and
 * the compiled executable they run against. Each says why it cannot run, for a visible skip.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll } from "bun:test";
import { repoRoot, startChildServer, testEnv, testPassword, type ChildServer, type Registered } from "../harness";

export const chromiumPath = "/usr/bin/chromium";
export const binaryPath = join(repoRoot, "dist/inboxd");
export const screenshotDir = join(repoRoot, "test/console/screenshots");

export const chromiumMissing = existsSync(chromiumPath) ? undefined : `${chromiumPath} is missing (apt-get install chromium)`;
export const binaryMissing = existsSync(binaryPath) ? undefined : "dist/inboxd is not built (bun run build)";

/**
 * dist/inboxd started in an empty folder (no node_modules, no source: what it serves is embedded)
 * for the tests of the enclosing describe; the getter gives the running child.
 */
export function compiledServerInEmptyFolder(): () => ChildServer {
  let folder: string;
  let child: ChildServer;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "inboxd-empty-"));
    child = await startChildServer(testEnv(join(folder, "data")), { command: [binaryPath], cwd: folder });
  });
  afterAll(async () => {
    await child?.kill();
    rmSync(folder, { recursive: true, force: true });
  });
  return () => child;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A new page of `browser` signed in to the console at `baseUrl` as `account`, its inbox list shown. */
export async function signedInPage(browser: Browser, baseUrl: string, account: Registered): Promise<Page> {
  const page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(baseUrl);
  await page.getByLabel("Email").fill(account.user.email);
  await page.getByLabel("Password").fill(testPassword);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("list", { name: "Inboxes" }).waitFor();
  return page;
}

/** Headless, offline-minded (no background requests of its own, which would muddy request assertions), in a fresh profile. */
export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "inboxd-chromium-"));
  mkdirSync(screenshotDir, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 860 },
    acceptDownloads: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const axeSource = readFileSync(join(repoRoot, "node_modules/axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

/**
 * axe-core's serious and critical violations on the page as it stands (WCAG 2.x A and AA rules,
 * contrast included). Evaluated through the DevTools protocol, so the console's CSP (no inline
 * script) stays as it is. Message HTML frames are the sender's markup, not the console's: left out.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(axeSource);
  return page.evaluate(`window.axe
    .run(document, { iframes: false, runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] }, resultTypes: ["violations"] })
    .then((results) => results.violations
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.map((node) => node.target.join(" ")) })))`);
}

/**
 * What scrolls sideways: "the page" when it is wider than the window, and each element inside it
 * that scrolls (overflow-x auto or scroll) with more than its width to show, as tag.class#id.
 * Empty when nothing does.
 */
export const sidewaysScrolling = (page: Page) =>
  page.evaluate(`[
    ...(document.documentElement.scrollWidth > window.innerWidth ? ["the page"] : []),
    ...[...document.body.querySelectorAll("*")]
      .filter((element) => ["auto", "scroll"].includes(getComputedStyle(element).overflowX) && element.scrollWidth > element.clientWidth)
      .map((element) => element.localName + [...element.classList].map((name) => "." + name).join("") + (element.id ? "#" + element.id : "")),
  ]`) as Promise<string[]>;
