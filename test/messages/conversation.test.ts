/** Local delivery between inboxes of this server, the reply round trip, and tenancy. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { seedOrganization, type TestServer } from "../harness";
import { createInbox, events, headerBlock, rawSource, startMessageServer, validSend } from "./helpers";

let server: TestServer;
let alice: { key: string; inbox: { id: string; email: string } };
let bob: { key: string; inbox: { id: string; email: string } };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  const aliceOrg = await seedOrganization(server.app, "Alice's org");
  const bobOrg = await seedOrganization(server.app, "Bob's org");
  alice = { key: aliceOrg.apiKey, inbox: await createInbox(server, aliceOrg.apiKey, { name: "Alice" }) };
  bob = { key: bobOrg.apiKey, inbox: await createInbox(server, bobOrg.apiKey, { name: "Bob" }) };
});
afterAll(() => server.cleanup());

const messagesPath = (inboxId: string) => `/v1/inboxes/${inboxId}/messages`;
const reply = (who: typeof alice, messageId: string, body: unknown = { text: "Answer", html: "<p>Answer</p>" }) =>
  server.api.post(`${messagesPath(who.inbox.id)}/${messageId}/reply`, body, who.key);
const inboxList = async (who: typeof alice) => (await server.api.get(messagesPath(who.inbox.id), who.key)).body as { id: string; subject: string; threadId: string }[];
const thread = async (who: typeof alice, threadId: string) => (await server.api.get(`/v1/inboxes/${who.inbox.id}/threads/${threadId}`, who.key)).body;

describe("local delivery", () => {
  test("a recipient inbox on this server gets a received copy at once; remote recipients are queued", async () => {
    const sent = await server.api.post(
      `${messagesPath(alice.inbox.id)}/send`,
      validSend({ to: [bob.inbox.email.toUpperCase(), "remote@example.com"], subject: "Local hello", attachments: [{ content: Buffer.from("hi").toString("base64"), name: "hi.txt" }] }),
      alice.key,
    );
    expect(sent.status).toBe(201);
    expect(sent.body.deliveries.map((d: { recipient: string }) => d.recipient)).toEqual(["remote@example.com"]);

    const [copySummary] = await inboxList(bob);
    expect(copySummary).toMatchObject({ subject: "Local hello", status: "received", from: alice.inbox.email });
    const copy = (await server.api.get(`${messagesPath(bob.inbox.id)}/${copySummary!.id}`, bob.key)).body;
    expect(copy).toMatchObject({
      organizationId: expect.not.stringMatching(sent.body.organizationId),
      inboxId: bob.inbox.id,
      fromInboxId: alice.inbox.id,
      toInboxId: bob.inbox.id,
      text: "Plain body",
      html: "<p>HTML body</p>",
      labels: [],
      deliveries: [],
    });
    expect(copy.threadId).not.toBe(sent.body.threadId);
    expect(copy.attachments[0]).toMatchObject({ name: "hi.txt", content: Buffer.from("hi").toString("base64") });
    expect(await events(server, "message.received", copy.id)).toEqual([copy]);
    // The copy's source is the message as composed, Message-ID and all.
    expect(await rawSource(server, copy.id)).toBe(await rawSource(server, sent.body.id));
  });

  test("two organizations sending to each other's inboxes at the same moment: every send is 201 (on PostgreSQL the two took each other's event locks in opposite orders and deadlocked)", async () => {
    const send = (from: typeof alice, to: typeof bob, subject: string) => server.api.post(`${messagesPath(from.inbox.id)}/send`, validSend({ to: [to.inbox.email], subject }), from.key);
    const statuses: number[] = [];
    for (let round = 0; round < 20; round++) {
      const answers = await Promise.all([send(alice, bob, `crossing a${round}`), send(bob, alice, `crossing b${round}`)]);
      statuses.push(...answers.map((answer) => answer.status));
    }
    expect(statuses.filter((status) => status !== 201)).toEqual([]);
  }, 60_000);

  test("a Bcc recipient on this server gets a copy that does not name it", async () => {
    const carolOrg = await seedOrganization(server.app);
    const carol = await createInbox(server, carolOrg.apiKey);
    const sent = await server.api.post(`${messagesPath(alice.inbox.id)}/send`, validSend({ to: ["x@example.com"], bcc: [carol.email], subject: "bcc" }), alice.key);
    expect(sent.status).toBe(201);
    const [copy] = (await server.api.get(messagesPath(carol.id), carolOrg.apiKey)).body;
    expect(copy).toMatchObject({ subject: "bcc", to: ["x@example.com"] });
    expect(JSON.stringify((await server.api.get(`${messagesPath(carol.id)}/${copy.id}`, carolOrg.apiKey)).body.bcc)).toBe("[]");
  });
  test("name+tag reaches the inbox name (RFC 5233), one copy however many tags", async () => {
    const [local, domain] = bob.inbox.email.split("@");
    const tagged = [`${local}+one@${domain}`, `${local}+two@${domain}`];
    const sent = await server.api.post(`${messagesPath(alice.inbox.id)}/send`, validSend({ to: tagged, subject: "Tagged" }), alice.key);
    expect(sent.body.deliveries).toEqual([]);
    expect((await inboxList(bob)).filter((m) => m.subject === "Tagged")).toHaveLength(1);
  });
});

describe("reply round trip", () => {
  test("replies stay in each side's thread, Re: is added once, In-Reply-To and References chain", async () => {
    const original = (await server.api.post(`${messagesPath(alice.inbox.id)}/send`, validSend({ to: [bob.inbox.email], subject: "Project plan" }), alice.key)).body;
    const bobCopy = (await inboxList(bob)).find((m) => m.subject === "Project plan")!;

    server.clock.advance(1000);
    const bobReply = await reply(bob, bobCopy.id);
    expect(bobReply.status).toBe(201);
    expect(bobReply.body).toMatchObject({ threadId: bobCopy.threadId, from: bob.inbox.email, to: [alice.inbox.email], subject: "Re: Project plan", status: "sent" });
    expect(bobReply.headers.get("ratelimit-remaining")).not.toBeNull();
    const originalId = headerBlock(await rawSource(server, original.id)).match(/^Message-ID: (.+)$/m)![1]!;
    const replyHeaders = headerBlock(await rawSource(server, bobReply.body.id));
    expect(replyHeaders).toContain(`In-Reply-To: ${originalId}`);
    expect(replyHeaders).toContain(`References: ${originalId}`);
    expect(replyHeaders).toContain("Subject: Re: Project plan");

    // Alice's copy of the answer joins her original thread, by In-Reply-To.
    const aliceCopy = (await inboxList(alice)).find((m) => m.subject === "Re: Project plan")!;
    expect(aliceCopy.threadId).toBe(original.threadId);

    server.clock.advance(1000);
    const aliceReply = await reply(alice, aliceCopy.id, { text: "Second answer", html: "<p>Second answer</p>" });
    expect(aliceReply.body).toMatchObject({ threadId: original.threadId, to: [bob.inbox.email], subject: "Re: Project plan" });
    const chain = headerBlock(await rawSource(server, aliceReply.body.id)).match(/^References: (.+)$/m)![1]!.split(" ");
    expect(chain).toEqual([originalId, headerBlock(await rawSource(server, bobReply.body.id)).match(/^Message-ID: (.+)$/m)![1]!]);

    const aliceThread = await thread(alice, original.threadId);
    expect(aliceThread).toMatchObject({ id: original.threadId, _id: original.threadId, inboxId: alice.inbox.id, subject: "Project plan", messageCount: 3 });
    expect(aliceThread.messages.map((m: { subject: string; status: string }) => `${m.status} ${m.subject}`)).toEqual(["sent Project plan", "received Re: Project plan", "sent Re: Project plan"]);
    expect(aliceThread.lastMessageAt).toBe(aliceReply.body.createdAt);
    const bobThread = await thread(bob, bobCopy.threadId);
    expect(bobThread.messages.map((m: { status: string }) => m.status)).toEqual(["received", "sent", "received"]);

    const threads = (await server.api.get(`/v1/inboxes/${alice.inbox.id}/threads`, alice.key)).body;
    expect(threads[0]).toMatchObject({ id: original.threadId, messageCount: 3 });
    expect(threads[0]).not.toHaveProperty("messages");
  });

  test("a reply to a message the inbox sent goes to its original recipients", async () => {
    const sent = (await server.api.post(`${messagesPath(alice.inbox.id)}/send`, validSend({ to: ["x@example.com", "y@example.com"], cc: ["z@example.com"], subject: "Re: already" }), alice.key)).body;
    const res = await reply(alice, sent.id);
    expect(res.body).toMatchObject({ to: ["x@example.com", "y@example.com"], cc: ["z@example.com"], subject: "Re: already", threadId: sent.threadId });
  });

  test("reply: unknown message 404 Message not found, unknown inbox 404 Inbox not found, missing text 422", async () => {
    const sent = (await server.api.post(`${messagesPath(alice.inbox.id)}/send`, validSend(), alice.key)).body;
    expect((await reply(alice, "msg_unknown")).body).toEqual({ error: "Message not found" });
    const res = await server.api.post(`${messagesPath("inb_unknown")}/${sent.id}/reply`, { text: "a", html: "b" }, alice.key);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Inbox not found" });
    const missing = await reply(alice, sent.id, { html: "<p>x</p>" });
    expect(missing.status).toBe(422);
    expect(missing.body.error).toStartWith("text: ");
    expect((await reply(alice, sent.id, { text: "x", html: 5 })).body.error).toStartWith("html: ");
    expect((await reply(alice, sent.id, { text: "x", html: "y", replyAll: "yes" })).body.error).toBe("replyAll: must be true or false");
  });
});

describe("tenancy", () => {
  test("another organization's inbox, message and thread are 404 with the exact messages", async () => {
    const sent = (await server.api.post(`${messagesPath(alice.inbox.id)}/send`, validSend(), alice.key)).body;
    const asBob = async (method: string, path: string, body?: unknown) => {
      const res = await server.api.request(method, path, { token: bob.key, body });
      return { status: res.status, body: res.body };
    };
    const notFound = (error: string) => ({ status: 404, body: { error } });
    expect(await asBob("GET", messagesPath(alice.inbox.id))).toEqual(notFound("Inbox not found"));
    expect(await asBob("POST", `${messagesPath(alice.inbox.id)}/send`, validSend())).toEqual(notFound("Inbox not found"));
    expect(await asBob("POST", `${messagesPath(alice.inbox.id)}/${sent.id}/reply`, { text: "a", html: "b" })).toEqual(notFound("Inbox not found"));
    expect(await asBob("GET", `${messagesPath(alice.inbox.id)}/${sent.id}`)).toEqual(notFound("Message not found"));
    expect(await asBob("GET", `/v1/inboxes/${alice.inbox.id}/threads`)).toEqual(notFound("Inbox not found"));
    expect(await asBob("GET", `/v1/inboxes/${alice.inbox.id}/threads/${sent.threadId}`)).toEqual(notFound("Thread not found"));
    // Bob's own inbox with Alice's ids.
    expect(await asBob("GET", `${messagesPath(bob.inbox.id)}/${sent.id}`)).toEqual(notFound("Message not found"));
    expect(await asBob("POST", `${messagesPath(bob.inbox.id)}/${sent.id}/reply`, { text: "a", html: "b" })).toEqual(notFound("Message not found"));
    expect(await asBob("GET", `/v1/inboxes/${bob.inbox.id}/threads/${sent.threadId}`)).toEqual(notFound("Thread not found"));
    expect(await asBob("GET", `/v1/inboxes/${bob.inbox.id}/threads/thr_unknown`)).toEqual(notFound("Thread not found"));
    expect(await asBob("GET", `${messagesPath(bob.inbox.id)}/msg_unknown`)).toEqual(notFound("Message not found"));
  });

  test("thread and message lists validate page and per", async () => {
    for (const path of [messagesPath(alice.inbox.id), `/v1/inboxes/${alice.inbox.id}/threads`]) {
      for (const query of ["per=0", "per=101", "page=-1"]) {
        const res = await server.api.get(`${path}?${query}`, alice.key);
        expect({ path, query, status: res.status }).toEqual({ path, query, status: 422 });
      }
    }
  });
});
