// Read and unread per message: received mail starts unread and sent mail read, PATCH
// .../messages/{messageId} sets it, and the inbox and thread lists count it (migration 0200).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getMessage, getThread } from "../../src/messages/service";
import { seedOrganization, type TestServer } from "../harness";
import { createInbox, events, startMessageServer, validSend } from "./helpers";

let server: TestServer;
let key: string;
let organizationId: string;
let sender: { id: string; email: string };
let recipient: { id: string; email: string };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  ({ apiKey: key, organizationId } = await seedOrganization(server.app));
  sender = await createInbox(server, key, { name: "Acme Bank" });
  recipient = await createInbox(server, key);
});
afterAll(() => server.cleanup());

/** Sends from `sender` to `recipient` (delivered on this server) and returns the received copy's summary. */
async function deliver(overrides: Record<string, unknown> = {}) {
  const sent = await server.api.post(`/v1/inboxes/${sender.id}/messages/send`, validSend({ to: [recipient.email], ...overrides }), key);
  expect(sent.status).toBe(201);
  const list = await server.api.get(`/v1/inboxes/${recipient.id}/messages?per=1`, key);
  return { sent: sent.body, received: list.body[0] };
}
const inboxOf = async (inboxId: string) => (await server.api.get(`/v1/inboxes/${inboxId}`, key)).body;
const threadsOf = async (inboxId: string) => (await server.api.get(`/v1/inboxes/${inboxId}/threads`, key)).body;
const patch = (inboxId: string, messageId: string, body: unknown, token = key) => server.api.patch(`/v1/inboxes/${inboxId}/messages/${messageId}`, body, token);

describe("read and unread", () => {
  test("a sent message starts read, its received copy unread; lists and counts show it", async () => {
    const { sent, received } = await deliver({ subject: "Statement", text: "Your statement\n\n  is ready.", labels: ["bank"] });
    expect(sent.read).toBe(true);
    expect(received).toMatchObject({ read: false, fromName: "Acme Bank", from: sender.email, labels: [] });
    expect((await server.api.get(`/v1/inboxes/${recipient.id}/messages/${received.id}`, key)).body.read).toBe(false);
    expect(await inboxOf(recipient.id)).toMatchObject({ messageCount: 1, unreadCount: 1 });
    expect(await inboxOf(sender.id)).toMatchObject({ messageCount: 1, unreadCount: 0 });
    const [thread] = await threadsOf(recipient.id);
    expect(thread).toMatchObject({ subject: "Statement", from: sender.email, fromName: "Acme Bank", preview: "Your statement is ready.", unreadCount: 1, attachmentCount: 0, labels: [] });
    const listed = (await server.api.get("/v1/inboxes", key)).body.find((inbox: { id: string }) => inbox.id === recipient.id);
    expect(listed).toMatchObject({ messageCount: 1, unreadCount: 1 });
  });

  test("PATCH read sets it both ways, counts follow, and no event is recorded", async () => {
    const { received } = await deliver({ subject: "Mark me" });
    const before = (await inboxOf(recipient.id)).unreadCount;
    const read = await patch(recipient.id, received.id, { read: true });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: received.id, read: true, subject: "Mark me" });
    expect((await inboxOf(recipient.id)).unreadCount).toBe(before - 1);
    expect((await threadsOf(recipient.id)).find((thread: { id: string }) => thread.id === received.threadId).unreadCount).toBe(0);
    expect((await patch(recipient.id, received.id, { read: true })).body.read).toBe(true);
    expect((await patch(recipient.id, received.id, { read: false })).body.read).toBe(false);
    expect((await inboxOf(recipient.id)).unreadCount).toBe(before);
    expect(await events(server, "message.updated", received.id)).toEqual([]);
  });

  test("read and labels in one request; a non-boolean read is 422; another organization's message 404", async () => {
    const { received } = await deliver({ subject: "Both" });
    const both = await patch(recipient.id, received.id, { read: true, addLabels: ["done"] });
    expect(both.body).toMatchObject({ read: true, labels: ["done"] });
    const bad = await patch(recipient.id, received.id, { read: "yes" });
    expect(bad.status).toBe(422);
    expect(bad.body.error).toContain("read");
    const other = (await seedOrganization(server.app, "Other")).apiKey;
    expect((await patch(recipient.id, received.id, { read: false }, other)).status).toBe(404);
    expect((await server.api.get(`/v1/inboxes/${recipient.id}/messages/${received.id}`, key)).body.read).toBe(true);
  });

  test("a message dated before a thread's newest (a send composed while a reply arrived) never moves the thread's activity back", async () => {
    const { received } = await deliver({ subject: "Activity" });
    const before = (await server.api.get(`/v1/inboxes/${recipient.id}/threads/${received.threadId}`, key)).body;
    await server.app.store.transaction((tx) => tx.threads.addMessage(received.threadId, Date.parse(before.lastMessageAt) - 60_000));
    const after = (await server.api.get(`/v1/inboxes/${recipient.id}/threads/${received.threadId}`, key)).body;
    expect({ lastMessageAt: after.lastMessageAt, updatedAt: after.updatedAt }).toEqual({ lastMessageAt: before.lastMessageAt, updatedAt: before.updatedAt });
  });

  test("a thread's preview is 200 characters of its text with white space folded, whatever white space comes first", async () => {
    const preview = async (text: string) => {
      const { received } = await deliver({ subject: `Preview ${text.length}`, text });
      return (await threadsOf(recipient.id)).find((each: { id: string }) => each.id === received.threadId).preview;
    };
    const words = "word ".repeat(60).trim();
    expect(await preview(`${"\n".repeat(250)}After blank lines`)).toBe("After blank lines");
    expect(await preview(`Hi${" ".repeat(199)}there`)).toBe("Hi there");
    expect(await preview(words)).toBe(words.slice(0, 200));
    expect(await preview(`${"😀".repeat(250)}`)).toBe("😀".repeat(200));
  });

  test("a thread's overview: the newest message's sender, its labels, attachments without inline parts", async () => {
    const { received } = await deliver({ subject: "With a file", attachments: [{ name: "a.txt", contentType: "text/plain", content: Buffer.from("hi").toString("base64") }] });
    await patch(recipient.id, received.id, { labels: ["x", "y"] });
    const reply = await server.api.post(`/v1/inboxes/${recipient.id}/messages/${received.id}/reply`, { text: "Thanks", html: "" }, key);
    expect(reply.status).toBe(201);
    await server.api.patch(`/v1/inboxes/${recipient.id}/messages/${reply.body.id}`, { labels: ["y", "z"] }, key);
    const thread = (await threadsOf(recipient.id)).find((each: { id: string }) => each.id === received.threadId);
    expect(thread).toMatchObject({ messageCount: 2, from: recipient.email, preview: "Thanks", attachmentCount: 1, unreadCount: 1 });
    expect(thread.fromName).toBeUndefined();
    expect([...thread.labels].sort()).toEqual(["x", "y", "z"]);
    const whole = (await server.api.get(`/v1/inboxes/${recipient.id}/threads/${received.threadId}`, key)).body;
    expect(whole).toMatchObject({ unreadCount: 1, attachmentCount: 1 });
    expect(whole.messages.map((message: { read: boolean }) => message.read)).toEqual([false, true]);
  });
});

describe("attachmentContent=false", () => {
  test.each([
    ["small, answered whole", 2],
    ["large, answered a message at a time", 200_000],
  ])("a message and its thread read without their attachments' content (%s); true or left out keeps it; another value is 422", async (_, size) => {
    const file = Buffer.alloc(size, 7);
    const { received } = await deliver({ subject: "Listed file", attachments: [{ name: "file.bin", contentType: "application/octet-stream", content: file.toString("base64") }] });
    const messagePath = `/v1/inboxes/${recipient.id}/messages/${received.id}`;
    const threadPath = `/v1/inboxes/${recipient.id}/threads/${received.threadId}`;
    const listed = { name: "file.bin", contentType: "application/octet-stream", size, inline: false };
    const message = (await server.api.get(`${messagePath}?attachmentContent=false`, key)).body;
    expect(message.attachments).toEqual([{ id: expect.any(String), ...listed }]);
    expect(message.subject).toBe("Listed file");
    const thread = (await server.api.get(`${threadPath}?attachmentContent=false`, key)).body;
    expect(thread.messages.map((each: { attachments: unknown[] }) => each.attachments)).toEqual([[{ id: message.attachments[0].id, ...listed }]]);
    for (const query of ["", "?attachmentContent=true"]) {
      expect((await server.api.get(`${messagePath}${query}`, key)).body.attachments[0].content).toBe(file.toString("base64"));
      expect((await server.api.get(`${threadPath}${query}`, key)).body.messages[0].attachments[0].content).toBe(file.toString("base64"));
    }
    for (const path of [messagePath, threadPath]) {
      const refused = await server.api.get(`${path}?attachmentContent=no`, key);
      expect(refused.status).toBe(422);
      expect(refused.body.error).toContain("attachmentContent");
    }
  });
  test("left out, no attachment's content is read from the store: a message, and a thread whole or in pieces", async () => {
    const { received } = await deliver({ subject: "Never read", attachments: [{ name: "f.bin", content: Buffer.alloc(100_000, 3).toString("base64") }] });
    const messages = server.app.store.messages;
    const { attachmentsOf, attachment } = messages;
    const trap = async (): Promise<never> => {
      throw new Error("an attachment's content was read");
    };
    Object.assign(messages, { attachmentsOf: trap, attachment: trap });
    try {
      const listed = [{ id: expect.any(String), name: "f.bin", contentType: "application/octet-stream", size: 100_000, inline: false }];
      expect((await getMessage(server.app, organizationId, recipient.id, received.id, false)).attachments).toEqual(listed);
      const thread = await getThread(server.app, organizationId, recipient.id, received.threadId, false);
      expect((await thread.whole()).messages.map((message) => message.attachments)).toEqual([listed]);
      let text = "";
      for await (const piece of thread.pieces()) text += piece;
      expect(JSON.parse(text).messages[0].attachments).toEqual(listed);
      await expect(getMessage(server.app, organizationId, recipient.id, received.id)).rejects.toThrow("an attachment's content was read");
    } finally {
      Object.assign(messages, { attachmentsOf, attachment });
    }
  });
});
