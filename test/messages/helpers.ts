/** Shared steps of the message tests: the server, inboxes over HTTP, a valid send body, stored rows and events. */
import type { EventRecord } from "../../src/store";
import { queryRow, startTestServer, type TestServer } from "../harness";
import { startDnsServer } from "../peers/dns-server";

/**
 * The real server, its DNS pointed at an empty loopback zone: the outbound worker picks up remote
 * deliveries (and finds no mail server for them) without a look-up leaving the machine.
 */
export async function startMessageServer(env: Record<string, string> = {}, dataDir?: string): Promise<TestServer> {
  const dns = await startDnsServer();
  const server = await startTestServer({ env: { INBOXD_DNS_SERVERS: dns.address, ...env }, dataDir });
  const cleanup = server.cleanup;
  return Object.assign(server, { cleanup: async () => (await cleanup(), await dns.close()) });
}

export async function createInbox(server: TestServer, apiKey: string, body: { name?: string; email?: string } = {}) {
  const res = await server.api.post("/v1/inboxes", body, apiKey);
  if (res.status !== 201) throw new Error(`create inbox: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; email: string; name?: string };
}

export const validSend = (overrides: Record<string, unknown> = {}) => ({
  to: ["someone@example.com"],
  subject: "Hello",
  text: "Plain body",
  html: "<p>HTML body</p>",
  ...overrides,
});

export const rawSource = async (server: TestServer, messageId: string) => (await server.app.store.messages.rawSource(messageId))!.toString("utf8");

/** The header block of a raw message, folded lines joined (RFC 5322 §2.2.3). */
export const headerBlock = (raw: string) => raw.slice(0, raw.indexOf("\r\n\r\n")).replace(/\r\n([ \t])/g, "$1");

/** The payloads of a message's events, read back whole as webhooks send them (through the store, as the event stream reads them). */
export async function events(server: TestServer, type: string, messageId: string) {
  const owner = await queryRow<{ organizationId: string }>(server.app, 'SELECT organization_id AS "organizationId" FROM events WHERE message_id = ?', messageId);
  const found: EventRecord[] = [];
  for (let afterId: string | null = null; owner; ) {
    const page = await server.app.store.events.readAfter(owner.organizationId, { afterId, limit: 1000, maxChars: Number.MAX_SAFE_INTEGER, types: [type] });
    found.push(...page.events.filter((event) => event.messageId === messageId));
    if (!page.more) break;
    afterId = page.nextAfterId;
  }
  return found.map((event) => JSON.parse(event.payload));
}
