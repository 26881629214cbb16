/** Shared steps of the message tests: inboxes over HTTP, a valid send body, stored rows and events. */
import type { TestServer } from "../harness";

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

export const rawSource = (server: TestServer, messageId: string) => server.app.store.messages.rawSource(messageId)!.toString("utf8");

/** The header block of a raw message, unfolded lines as written. */
export const headerBlock = (raw: string) => raw.slice(0, raw.indexOf("\r\n\r\n"));

export function events(server: TestServer, type: string, messageId: string) {
  return server.app.store.sqlite
    .query<{ payload: string }, [string, string]>("SELECT payload FROM events WHERE type = ? AND message_id = ?")
    .all(type, messageId)
    .map((row) => JSON.parse(row.payload));
}
