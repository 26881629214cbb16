// Hardening: a header that costs quadratic work is refused in the dialogue before any parser sees
// it, and an analysis that outlives its deadline (after the 250) is tried again later while the
// next message is fine. Slow DNS does not make an analysis outlive it: that ends with the
// message's DNS budget (test/hardening/slow-dns.test.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { sendMail } from "../smtp/mail-client";

let server: TestServer;
let dns: DnsServer;
let inbox: string;
let inboxId: string;
let apiKey: string;

beforeAll(async () => {
  dns = await startDnsServer();
  // A deadline that parsing a message of 20 MB passes, and the analysis of a short one stays far within.
  server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, INBOXD_SMTP_ANALYSIS_TIMEOUT_MS: "200" } });
  ({ apiKey } = await seedOrganization(server.app));
  ({ email: inbox, id: inboxId } = (await server.api.post("/v1/inboxes", {}, apiKey)).body);
});
afterAll(async () => {
  await server.cleanup();
  await dns.close();
});

const message = (from: string, subject: string, extraHeader = "") => `From: ${from}\r\nTo: ${inbox}\r\nSubject: ${subject}${extraHeader}\r\nMessage-ID: <${crypto.randomUUID()}@example.net>\r\n\r\nbody\r\n`;

/** Sends and resolves with the reply code and the time it took; a refusal is a result here, not an error. */
async function timedSend(from: string, raw: string): Promise<{ code: number; ms: number; response: string }> {
  const started = performance.now();
  try {
    const sent = await sendMail(server.smtpPort, { from, to: [inbox], raw, socketTimeoutMs: 30_000 });
    return { code: 250, ms: performance.now() - started, response: sent.response };
  } catch (error) {
    const { responseCode, response } = error as { responseCode?: number; response?: string };
    return { code: responseCode ?? 0, ms: performance.now() - started, response: response ?? String(error) };
  }
}

test("two fold bombs are refused with 552 within 1 s while another session's message gets its 250 promptly", async () => {
  // 200 KB of short folds: 50,000 lines; 300 KB in 1,500 long folds: within the line bound, over the size bound.
  const [sizeBomb, lineBomb, honest] = await Promise.all([
    timedSend("bomb@example.net", message("bomb@example.net", "x", ("\r\n " + "b".repeat(200)).repeat(1500))),
    timedSend("bomb@example.net", message("bomb@example.net", "x", "\r\n b".repeat(50_000))),
    timedSend("honest@example.net", message("honest@example.net", "hello")),
  ]);
  console.log(`fold bombs answered in ${sizeBomb.ms.toFixed(0)} and ${lineBomb.ms.toFixed(0)} ms; the other session's 250 in ${honest.ms.toFixed(0)} ms`);
  expect(sizeBomb.code).toBe(552);
  expect(sizeBomb.response).toContain("header block over");
  expect(lineBomb.code).toBe(552);
  expect(lineBomb.response).toContain("more than 2000 header lines");
  expect(Math.max(sizeBomb.ms, lineBomb.ms)).toBeLessThan(1000);
  expect(honest.code).toBe(250);
  expect(honest.ms).toBeLessThan(1000);
}, 30_000);

test("a header at the line bound is still accepted", async () => {
  // From, To, Subject and Message-ID, and the Subject's folds: 2000 lines in all.
  const atBound = await timedSend("folds@example.net", message("folds@example.net", "x", "\r\n b".repeat(2000 - 4)));
  expect(atBound.code).toBe(250);
  const over = await timedSend("folds@example.net", message("folds@example.net", "x", "\r\n b".repeat(2000 - 3)));
  expect(over.code).toBe(552);
}, 30_000);

test("an analysis past its deadline: the message waits for its next try, and the thread that replaces it analyses the next message", async () => {
  // 7 million lines of one letter: about 650 ms of parsing on an idle machine, three times the deadline.
  const stuck = await timedSend("someone@example.net", `${message("someone@example.net", "stuck").replace(/body\r\n$/, "")}${"a\r\n".repeat(7_000_000)}`);
  expect(stuck.code).toBe(250);
  const next = await timedSend("honest@example.net", message("honest@example.net", "after"));
  expect(next.code).toBe(250);
  // The API client waits for the inbound queue: the stuck analysis ends at its deadline, the next message is stored.
  const subjects = async () => (await server.api.get(`/v1/inboxes/${inboxId}/messages`, apiKey)).body.map((m: { subject: string }) => m.subject) as string[];
  const stored = await subjects();
  // Kept, its try counted, for a later one (a minute on).
  const waiting = await queryRows<{ attempts: number; dueIn: number }>(server.app, 'SELECT attempts, next_attempt_at - ?1 AS "dueIn" FROM accepted_inbound WHERE size > 1000000', server.clock.now());
  expect(waiting).toHaveLength(1);
  expect(waiting[0]!.attempts).toBe(1);
  expect(waiting[0]!.dueIn).toBeGreaterThan(50_000);
  if (!stored.includes("after")) {
    // On a loaded machine the new thread's first analysis, of modules not compiled yet, can outlive
    // the test's short deadline too: its next try (a minute on) stores it.
    console.log("the next message's first analysis passed the deadline too; its next try stores it");
    server.clock.advance(61_000);
  }
  const after = await subjects();
  expect(after).toContain("after");
  expect(after).not.toContain("stuck");
}, 30_000);
