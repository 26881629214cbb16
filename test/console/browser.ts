/**
 * A real Chromium (Debian's package) driven by playwright-core, for the web console's tests, and
 * the compiled executable they run against. Each says why it cannot run, for a visible skip.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { afterAll, beforeAll } from "bun:test";
import { repoRoot, startChildServer, testEnv, type ChildServer } from "../harness";

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
