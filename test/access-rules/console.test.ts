// The console's access rules view in a real Chromium against the server run from source: add an
// organization-wide block entry and an inbox's allow entry with the labelled form, see them listed,
// get a refusal for a bad value, and remove one (asked first, in place).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { register, startTestServer, type Registered, type TestServer } from "../harness";
import { chromiumMissing, launchBrowser, signedInPage, type Browser } from "../console/browser";

const stepTimeout = 20_000;
let server: TestServer;
let browser: Browser;
let page: Page;
let account: Registered;

beforeAll(async () => {
  if (chromiumMissing) return;
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await register(server.api);
  page = await signedInPage(browser, server.api.baseUrl, account);
}, stepTimeout);

afterAll(async () => {
  await browser?.close();
  await server?.cleanup();
}, stepTimeout);

const rules = async () => (await server.api.get("/v1/access-rules", account.apiKey.key)).body as { id: string; value: string; action: string; direction: string; inboxId?: string }[];

describe.skipIf(chromiumMissing !== undefined)(`access rules in the console${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ""}`, () => {
  test("add entries, see them listed, refuse a bad value, remove one", async () => {
    await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Access rules" }).click();
    await page.getByText("No access rules").waitFor();

    await page.getByLabel("Address or domain").fill("Spam.Example");
    await page.getByRole("button", { name: "Add rule" }).click();
    const table = page.getByRole("table", { name: "Access rules" });
    await table.getByRole("cell", { name: "spam.example" }).waitFor();

    await page.getByLabel("Direction").selectOption({ label: "Sending" });
    await page.getByLabel("Action").selectOption({ label: "Allow" });
    await page.getByLabel("Address or domain").fill("partner.example");
    await page.getByLabel("Applies to").selectOption({ label: account.inbox.email });
    await page.getByRole("button", { name: "Add rule" }).click();
    const partnerRow = table.getByRole("row").filter({ hasText: "partner.example" });
    await partnerRow.getByRole("cell", { name: account.inbox.email }).waitFor();
    expect(await partnerRow.getByRole("cell", { name: "Sending" }).count()).toBe(1);
    expect((await rules()).map(({ value, action, direction, inboxId }) => ({ value, action, direction, inboxId }))).toEqual([
      { value: "partner.example", action: "allow", direction: "send", inboxId: account.inbox.id },
      { value: "spam.example", action: "block", direction: "receive", inboxId: undefined },
    ]);

    await page.getByLabel("Address or domain").fill("not a domain");
    await page.getByRole("button", { name: "Add rule" }).click();
    await page.getByText("value: must be an email address").waitFor();

    await table.getByRole("row").filter({ hasText: "spam.example" }).getByRole("button", { name: "Remove" }).click();
    await page.getByRole("button", { name: "Yes, remove" }).click();
    await table.getByRole("cell", { name: "spam.example" }).waitFor({ state: "detached" });
    expect((await rules()).map((rule) => rule.value)).toEqual(["partner.example"]);
  }, stepTimeout);
});
