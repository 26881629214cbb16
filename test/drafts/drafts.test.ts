import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deleteDraft, maxScheduleAheadMs, sendDraftNow, updateDraft } from "../../src/drafts/service";
import { parseMessage } from "../../src/mail/parse";
import { storeReceivedMessage } from "../../src/messages/receive";
import { queryRow, seedOrganization, type TestServer } from "../harness";
import { createInbox, events, headerBlock, rawSource, startMessageServer } from "../messages/helpers";

let server: TestServer;
let key: string;
let organizationId: string;
let inbox: { id: string; email: string };
let colleague: { id: string; email: string };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  ({ apiKey: key, organizationId } = await seedOrganization(server.app));
  inbox = await createInbox(server, key, { name: "Sales" });
  colleague = await createInbox(server, key, { name: "Colleague" });
});
afterAll(() => server.cleanup());

const drafts = (inboxId = inbox.id) => `/v1/inboxes/${inboxId}/drafts`;
const create = (body: unknown, inboxId = inbox.id, token = key) => server.api.post(drafts(inboxId), body, token);
const patch = (id: string, body: unknown) => server.api.patch(`${drafts()}/${id}`, body, key);
const get = (id: string) => server.api.get(`${drafts()}/${id}`, key);
const sendNow = (id: string, inboxId = inbox.id) => server.api.post(`/v1/inboxes/${inboxId}/drafts/${id}/send`, undefined, key);
const complete = { to: [] as string[], subject: "Quarterly figures", text: "See attached.", html: "<p>See attached.</p>" };
const inFuture = (ms: number) => new Date(server.clock.now() + ms).toISOString();
const received = async (inboxId: string) => (await server.api.get(`/v1/inboxes/${inboxId}/messages`, key)).body as { id: string; subject: string; status: string }[];

describe("draft CRUD", () => {
  test("a draft with no field at all: 201, every field shown, null where unset", async () => {
    const res = await server.api.request("POST", drafts(), { token: key });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^drf_/),
      inboxId: inbox.id,
      threadId: null,
      inReplyToMessageId: null,
      to: [],
      cc: [],
      bcc: [],
      subject: null,
      text: null,
      html: null,
      labels: [],
      attachments: [],
      sendAt: null,
      status: "draft",
      messageId: null,
      failureReason: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      _id: res.body.id,
    });
    expect((await get(res.body.id)).body).toEqual(res.body);
  });

  test("fields are checked as a send checks them, each one named", async () => {
    const tooMany = Array.from({ length: 51 }, (_, i) => `r${i}@example.com`);
    const cases: [unknown, string][] = [
      [{ to: ["not an address"] }, "to[0]: must be an email address such as name@example.com or Name <name@example.com>"],
      [{ cc: ["ok@example.com", "nope"] }, "cc[1]: must be an email address such as name@example.com or Name <name@example.com>"],
      [{ to: tooMany }, "to: must be an array of at most 50 email addresses"],
      [{ to: tooMany.slice(0, 30), cc: tooMany.slice(30, 50), bcc: ["x@example.com"] }, "to, cc, bcc: at most 50 recipients in all (got 51)"],
      [{ subject: "two\r\nlines" }, "subject: must not contain line breaks or control characters"],
      [{ subject: 3 }, "subject: must be a string, or null"],
      [{ attachments: [{ content: "!!!" }] }, "attachments[0].content: must be base64"],
      [{ replyAll: true }, "replyAll: only for a reply draft (with inReplyToMessageId)"],
      [{ inReplyToMessageId: "msg_unknown" }, "inReplyToMessageId: no message with this id in the inbox"],
    ];
    for (const [body, error] of cases) {
      const res = await create(body);
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 422, error: expect.stringContaining(error.split(":")[0]!) });
      expect(res.body.error).toBe(error);
    }
  });

  test("PATCH changes the fields given, null clears one, attachments replace the old ones", async () => {
    const attachment = { content: Buffer.from("first").toString("base64"), name: "a.txt" };
    const draft = (await create({ to: ["ann@example.com"], subject: "Hi", text: "Hello", attachments: [attachment] })).body;
    expect(draft.attachments).toEqual([{ name: "a.txt", contentType: "text/plain", size: 5 }]);
    const res = await patch(draft.id, { subject: null, html: "<p>Hello</p>", cc: ["Bob <bob@example.com>"], attachments: [{ content: Buffer.from("second!").toString("base64") }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ to: ["ann@example.com"], cc: ["Bob <bob@example.com>"], subject: null, text: "Hello", html: "<p>Hello</p>", attachments: [{ name: null, contentType: "application/octet-stream", size: 7 }] });
    expect((await get(draft.id)).body).toEqual(res.body);
    expect((await patch(draft.id, { to: ["bad"] })).body).toEqual({ error: "to[0]: must be an email address such as name@example.com or Name <name@example.com>" });
    expect((await patch("drf_unknown", { subject: "x" })).status).toBe(404);
    // Fixed when the draft is made: refused, not ignored as if it applied.
    expect((await patch(draft.id, { inReplyToMessageId: "msg_x" })).body).toEqual({ error: "inReplyToMessageId: set when the draft is created; it cannot change" });
    expect((await patch(draft.id, { replyAll: true })).body).toEqual({ error: "replyAll: set when the draft is created; it cannot change" });
  });

  test("PATCHes at once each keep their change: none writes back the fields another changed meanwhile", async () => {
    for (let round = 0; round < 3; round++) {
      const draft = (await create({ ...complete, to: [colleague.email], sendAt: inFuture(600_000) })).body;
      const changes = [{ subject: `S${round}` }, { text: `T${round}` }, { html: `<p>H${round}</p>` }, { cc: ["cc@example.com"] }, { bcc: ["bcc@example.com"] }, { labels: [`L${round}`] }, { sendAt: null }];
      const answers = await Promise.all(changes.map((change) => patch(draft.id, change)));
      expect(answers.map((res) => res.status)).toEqual(changes.map(() => 200));
      expect((await get(draft.id)).body).toMatchObject({
        subject: `S${round}`,
        text: `T${round}`,
        html: `<p>H${round}</p>`,
        cc: ["cc@example.com"],
        bcc: ["bcc@example.com"],
        labels: [`L${round}`],
        sendAt: null,
        status: "draft",
      });
    }
    // A change whose attachment is staged while another commits: the unschedule stands, and the draft is not sent.
    const scheduled = (await create({ ...complete, to: [colleague.email], sendAt: inFuture(60_000) })).body;
    const large = { name: "large.bin", content: Buffer.alloc(4 * 1024 * 1024, 7).toString("base64") };
    await Promise.all([updateDraft(server.app, organizationId, inbox.id, scheduled.id, { attachments: [large] }), updateDraft(server.app, organizationId, inbox.id, scheduled.id, { sendAt: null })]);
    expect((await get(scheduled.id)).body).toMatchObject({ status: "draft", sendAt: null, attachments: [{ name: "large.bin", size: 4 * 1024 * 1024 }] });
    server.clock.advance(60_000);
    await server.app.queues.runDueNow("drafts");
    expect((await get(scheduled.id)).body.status).toBe("draft");
  });

  test("list: newest first, paged, counted; another organization sees none of it", async () => {
    const other = await createInbox(server, key);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create({ subject: `n${i}` }, other.id)).body.id);
    const first = await server.api.get(`${drafts(other.id)}?per=2`, key);
    expect(first.status).toBe(200);
    expect(first.body.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first.headers.get("x-total-count")).toBe("3");
    expect(first.headers.get("link")).toContain("page=2");
    expect((await server.api.get(`${drafts(other.id)}?page=2&per=2`, key)).body.map((d: { id: string }) => d.id)).toEqual([ids[0]]);

    const stranger = (await seedOrganization(server.app)).apiKey;
    expect((await server.api.get(drafts(other.id), stranger)).status).toBe(404);
    expect((await server.api.get(`${drafts(other.id)}/${ids[0]}`, stranger)).status).toBe(404);
    expect((await server.api.request("DELETE", `${drafts(other.id)}/${ids[0]}`, { token: stranger })).status).toBe(404);
    expect((await server.api.request("POST", `${drafts(other.id)}/${ids[0]}/send`, { token: stranger })).status).toBe(404);
    // Another inbox of the same organization does not hold it either.
    expect((await server.api.get(`${drafts(inbox.id)}/${ids[0]}`, key)).body).toEqual({ error: "Draft not found" });
  });

  test("DELETE: 200 with the draft as it was, then 404; its attachments' staged blob goes with it", async () => {
    const large = Buffer.alloc(300 * 1024, 7);
    const draft = (await create({ attachments: [{ content: large.toString("base64"), name: "big.bin" }] })).body;
    expect(draft.attachments).toEqual([{ name: "big.bin", contentType: "application/octet-stream", size: large.byteLength }]);
    const chunks = async () => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM blob_chunks b JOIN draft_attachments a ON a.blob_id = b.blob_id"))!.n;
    const allChunks = async () => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM blob_chunks"))!.n;
    expect(await chunks()).toBeGreaterThan(0);
    const before = await allChunks();
    const res = await server.api.delete(`${drafts()}/${draft.id}`, key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(draft);
    expect(await allChunks()).toBeLessThan(before);
    expect((await get(draft.id)).status).toBe(404);
    expect((await server.api.delete(`${drafts()}/${draft.id}`, key)).status).toBe(404);
  });
});

describe("sending a draft", () => {
  test("422 names every field a send needs that the draft lacks", async () => {
    const draft = (await create({})).body;
    expect((await sendNow(draft.id)).body).toEqual({ error: "to, subject, text or html: required to send the draft" });
    await patch(draft.id, { to: [colleague.email], html: "" });
    expect((await sendNow(draft.id)).body).toEqual({ error: "subject: required to send the draft" });
  });

  test("a draft deleted as it is sent: the send says 404, not that it is being sent", async () => {
    for (let round = 0; round < 5; round++) {
      const draft = (await create({ ...complete, subject: "Deleted as it is sent", to: [colleague.email] })).body;
      const [, sent] = await Promise.allSettled([deleteDraft(server.app, organizationId, inbox.id, draft.id), sendDraftNow(server.app, organizationId, inbox.id, draft.id)]);
      // Sent before the delete came, or refused as deleted.
      if (sent.status === "rejected") expect(sent.reason).toMatchObject({ kind: "not_found", message: "Draft not found" });
    }
  });

  test("201 with the sent message, as a send answers; the draft stays, sent, and changes no more", async () => {
    const attachment = Buffer.alloc(400 * 1024, 1);
    const draft = (await create({ ...complete, to: [colleague.email], bcc: ["hidden@example.com"], labels: ["q3", "q3"], attachments: [{ content: attachment.toString("base64"), name: "figures.bin" }] })).body;
    expect(draft.labels).toEqual(["q3"]);
    const res = await sendNow(draft.id);
    expect(res.status).toBe(201);
    expect(res.headers.get("ratelimit-limit")).toBe("10000");
    expect(res.body).toMatchObject({ status: "sent", from: inbox.email, to: [colleague.email], bcc: ["hidden@example.com"], subject: complete.subject, text: complete.text, html: complete.html, labels: ["q3"] });
    expect(res.body.attachments).toHaveLength(1);
    expect(Buffer.from(res.body.attachments[0].content, "base64").equals(attachment)).toBe(true);
    expect((await received(colleague.id)).filter((m) => m.subject === complete.subject)).toHaveLength(1);
    expect(await events(server, "message.sent", res.body.id)).toHaveLength(1);

    const sent = (await get(draft.id)).body;
    expect(sent).toMatchObject({ status: "sent", messageId: res.body.id, failureReason: null });
    expect((await sendNow(draft.id)).body).toEqual({ error: `Draft was already sent (message ${res.body.id})` });
    expect((await patch(draft.id, { subject: "again" })).status).toBe(409);
    expect((await server.api.delete(`${drafts()}/${draft.id}`, key)).status).toBe(200);
  });

  test("a reply draft keeps its thread and goes out as a reply: recipients and subject filled in, In-Reply-To and References", async () => {
    const original = (await server.api.post(`/v1/inboxes/${colleague.id}/messages/send`, { to: [inbox.email], cc: ["carol@example.com"], subject: "Order 42", text: "Where is it?", html: "" }, key)).body;
    const incoming = (await received(inbox.id)).find((m) => m.subject === "Order 42")!;
    const inThread = (await server.api.get(`/v1/inboxes/${inbox.id}/messages/${incoming.id}`, key)).body;

    const res = await create({ inReplyToMessageId: incoming.id, replyAll: true, text: "On its way." });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ inReplyToMessageId: incoming.id, threadId: inThread.threadId, to: [colleague.email], cc: ["carol@example.com"], subject: "Re: Order 42", status: "draft" });
    // Given fields win over the ones filled in.
    expect((await create({ inReplyToMessageId: incoming.id, to: ["someone@example.com"], subject: "Other" })).body).toMatchObject({ to: ["someone@example.com"], cc: [], subject: "Other", threadId: inThread.threadId });

    const sent = (await sendNow(res.body.id)).body;
    expect(sent).toMatchObject({ threadId: inThread.threadId, subject: "Re: Order 42", to: [colleague.email], cc: ["carol@example.com"] });
    const originalId = /^Message-ID: (<[^>]+>)/m.exec(headerBlock(await rawSource(server, incoming.id)))![1];
    const headers = headerBlock(await rawSource(server, sent.id));
    expect(headers).toContain(`In-Reply-To: ${originalId}`);
    expect(headers).toContain(`References: ${originalId}`);
    // The answer lands in the colleague's thread of the original.
    const answer = (await received(colleague.id)).find((m) => m.subject === "Re: Order 42")!;
    expect((await server.api.get(`/v1/inboxes/${colleague.id}/messages/${answer.id}`, key)).body.threadId).toBe(original.threadId);
  });

  test("a received subject that decodes to a line break: a reply, and a reply draft as filled in, get it on one line, and the draft sends", async () => {
    const { app } = server;
    const raw = Buffer.from(`From: someone@example.com\r\nTo: ${inbox.email}\r\nSubject: =?utf-8?Q?Quarterly=0Areport?=\r\n\r\nFigures.\r\n`);
    const parsed = await parseMessage(raw);
    expect(parsed.subject).toBe("Quarterly\nreport");
    const record = (await app.store.inboxes.find(organizationId, inbox.id))!;
    const incoming = await app.store.transaction((tx) => storeReceivedMessage(app, tx, { inbox: record, parsed, raw }));
    const draft = await create({ inReplyToMessageId: incoming.id, text: "Thanks." });
    expect(draft.body.subject).toBe("Re: Quarterly report");
    expect((await sendNow(draft.body.id)).body).toMatchObject({ subject: "Re: Quarterly report", to: ["someone@example.com"] });
    const reply = await server.api.post(`/v1/inboxes/${inbox.id}/messages/${incoming.id}/reply`, { text: "Again.", html: "" }, key);
    expect(reply.status).toBe(201);
    expect(reply.body.subject).toBe("Re: Quarterly report");
  });

  test("a reply draft to a sender it cannot send to is 422 naming inReplyToMessageId, the draft's field, as the reply route names messageId", async () => {
    const { app } = server;
    const raw = Buffer.from(`From: jöe@example.com\r\nTo: ${inbox.email}\r\nSubject: Grüße\r\n\r\nHallo.\r\n`);
    const record = (await app.store.inboxes.find(organizationId, inbox.id))!;
    const incoming = await app.store.transaction(async (tx) => storeReceivedMessage(app, tx, { inbox: record, parsed: await parseMessage(raw), raw }));
    const draft = await create({ inReplyToMessageId: incoming.id, text: "Danke." });
    expect(draft.status).toBe(422);
    expect(draft.body.error).toStartWith("inReplyToMessageId: inboxd cannot send to jöe@example.com");
    const reply = await server.api.post(`/v1/inboxes/${inbox.id}/messages/${incoming.id}/reply`, { text: "Danke.", html: "" }, key);
    expect(reply.body.error).toStartWith("messageId: inboxd cannot send to jöe@example.com");
  });
});

describe("scheduled send", () => {
  test("sendAt: in the future and at most 365 days ahead; scheduling needs a complete draft", async () => {
    const scheduled = await create({ ...complete, to: [colleague.email], sendAt: inFuture(maxScheduleAheadMs - 60_000) });
    expect(scheduled.status).toBe(201);
    expect(scheduled.body.status).toBe("scheduled");
    const cases: [string | number, string][] = [
      [inFuture(maxScheduleAheadMs + 60_000), "sendAt: must be at most 365 days ahead"],
      [inFuture(-1000), "sendAt: must be in the future"],
      ["2030-01-31T09:00:00", "sendAt: must be an ISO 8601 date-time with a time zone, such as 2030-01-31T09:00:00Z"],
      ["tomorrow", "sendAt: must be an ISO 8601 date-time with a time zone, such as 2030-01-31T09:00:00Z"],
      [`${new Date(server.clock.now()).getUTCFullYear() + 1}-02-30T09:00:00Z`, "sendAt: must be an ISO 8601 date-time with a time zone, such as 2030-01-31T09:00:00Z"],
      [12, "sendAt: must be an ISO 8601 date-time string, or null"],
    ];
    for (const [sendAt, error] of cases) expect({ sendAt, ...(await create({ ...complete, to: [colleague.email], sendAt })).body }).toEqual({ sendAt, error });
    expect((await create({ subject: "incomplete", sendAt: inFuture(60_000) })).body).toEqual({ error: "to, text or html: required to send the draft" });
    // A scheduled draft stays complete.
    expect((await patch(scheduled.body.id, { subject: null })).body).toEqual({ error: "subject: required to send the draft" });
    await server.api.delete(`${drafts()}/${scheduled.body.id}`, key);
  });

  test("goes out when the clock reaches sendAt, not before; marked sent with its message", async () => {
    const draft = (await create({ ...complete, subject: "Scheduled 1", to: [colleague.email], sendAt: inFuture(3_600_000) })).body;
    server.clock.advance(3_600_000 - 60_000);
    await server.app.queues.runDueNow("drafts");
    expect((await get(draft.id)).body.status).toBe("scheduled");
    server.clock.advance(60_000);
    await server.app.queues.runDueNow("drafts");
    const sent = (await get(draft.id)).body;
    expect(sent).toMatchObject({ status: "sent", failureReason: null, sendAt: draft.sendAt });
    const message = (await server.api.get(`/v1/inboxes/${inbox.id}/messages/${sent.messageId}`, key)).body;
    expect(message).toMatchObject({ subject: "Scheduled 1", status: "sent" });
    expect(Date.parse(message.createdAt) - Date.parse(draft.sendAt)).toBeLessThan(5_000);
    expect((await received(colleague.id)).filter((m) => m.subject === "Scheduled 1")).toHaveLength(1);
  });

  test("an organization with many drafts due holds at most half the sends at once: another's draft due after them goes out among the first", async () => {
    const other = await seedOrganization(server.app, "Other scheduler");
    const othersInbox = await createInbox(server, other.apiKey, { name: "Other" });
    const flood = await Promise.all(Array.from({ length: 10 }, (_, i) => create({ ...complete, subject: `Flood ${i}`, to: [colleague.email], sendAt: inFuture(60_000) })));
    const single = (await create({ ...complete, subject: "Not last", to: [colleague.email], sendAt: inFuture(61_000) }, othersInbox.id, other.apiKey)).body;
    server.clock.advance(61_000);
    await server.app.queues.runDueNow("drafts");
    const messageIdOf = async (id: string, inboxId: string, token: string) => (await server.api.get(`/v1/inboxes/${inboxId}/drafts/${id}`, token)).body.messageId as string;
    const floodIds = await Promise.all(flood.map((res) => messageIdOf(res.body.id, inbox.id, key)));
    const singleId = await messageIdOf(single.id, othersInbox.id, other.apiKey);
    // Message ids sort in the order the sends committed; first come the sends started together.
    const order = [...floodIds, singleId].sort();
    expect(order.indexOf(singleId)).toBeLessThan(6);
  });

  test("without a push from the test: the queue sleeps until sendAt and sends within seconds of it", async () => {
    const draft = (await create({ ...complete, subject: "Scheduled soon", to: [colleague.email], sendAt: inFuture(1_500) })).body;
    const deadline = Date.now() + 10_000;
    let current = draft;
    while (current.status !== "sent" && Date.now() < deadline) {
      await Bun.sleep(50);
      current = (await get(draft.id)).body;
    }
    expect(current.status).toBe("sent");
    const message = (await server.api.get(`/v1/inboxes/${inbox.id}/messages/${current.messageId}`, key)).body;
    const late = Date.parse(message.createdAt) - Date.parse(draft.sendAt);
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(3_000);
  }, 15_000);

  test("deleting it, unscheduling it (sendAt: null) or deleting its inbox cancels the send", async () => {
    const doomed = await createInbox(server, key);
    const schedule = async (subject: string, inboxId = inbox.id) => (await create({ ...complete, subject, to: [colleague.email], sendAt: inFuture(600_000) }, inboxId)).body;
    const deleted = await schedule("Cancelled by delete");
    const unscheduled = await schedule("Cancelled by unschedule");
    await schedule("Cancelled with its inbox", doomed.id);
    expect((await server.api.delete(`${drafts()}/${deleted.id}`, key)).status).toBe(200);
    expect((await patch(unscheduled.id, { sendAt: null })).body).toMatchObject({ status: "draft", sendAt: null });
    expect((await server.api.delete(`/v1/inboxes/${doomed.id}`, key)).status).toBe(200);
    server.clock.advance(700_000);
    await server.app.queues.runDueNow("drafts");
    expect((await get(unscheduled.id)).body.status).toBe("draft");
    expect((await received(colleague.id)).filter((m) => m.subject.startsWith("Cancelled"))).toEqual([]);
    // Scheduled again, it goes.
    expect((await patch(unscheduled.id, { sendAt: inFuture(60_000) })).body.status).toBe("scheduled");
    server.clock.advance(60_000);
    await server.app.queues.runDueNow("drafts");
    expect((await get(unscheduled.id)).body.status).toBe("sent");
  });

  test("a draft that no longer passes the send's checks when due fails visibly, with the reason", async () => {
    const draft = (await create({ ...complete, subject: "Will fail", to: [colleague.email], sendAt: inFuture(60_000) })).body;
    // Changed behind the API's back: the queue must still check what it sends.
    const stored = (await server.app.store.drafts.find((await server.app.store.inboxes.findByEmail(inbox.email))!.organizationId, inbox.id, draft.id))!;
    await server.app.store.drafts.update({ ...stored, to: ["not an address"] });
    server.clock.advance(60_000);
    await server.app.queues.runDueNow("drafts");
    expect((await get(draft.id)).body).toMatchObject({ status: "failed", messageId: null, failureReason: "to[0]: must be an email address such as name@example.com or Name <name@example.com>" });
    // Fixed and sent by hand.
    expect((await patch(draft.id, { to: [colleague.email] })).body).toMatchObject({ status: "draft", failureReason: null, sendAt: null });
    expect((await sendNow(draft.id)).status).toBe(201);
  });
});

describe("the send rate limit", () => {
  let limited: TestServer;
  let limitedKey: string;
  let from: { id: string };
  let to: { id: string; email: string };
  beforeAll(async () => {
    limited = await startMessageServer({ INBOXD_SEND_LIMIT: "1" });
    limitedKey = (await seedOrganization(limited.app)).apiKey;
    from = await createInbox(limited, limitedKey);
    to = await createInbox(limited, limitedKey);
    // At the start of an hourly window, so that the steps below stay in it.
    limited.clock.advance(3_600_000 - (limited.clock.now() % 3_600_000) + 1_000);
  });
  afterAll(() => limited.cleanup());

  test("a draft counts as a send; refused now, it stays a draft; a scheduled one is sent in the next window, not lost", async () => {
    const api = limited.api;
    const body = { ...complete, to: [to.email] };
    const now = (await api.post(`/v1/inboxes/${from.id}/drafts`, { ...body, subject: "Now" }, limitedKey)).body;
    expect((await api.request("POST", `/v1/inboxes/${from.id}/drafts/${now.id}/send`, { token: limitedKey })).status).toBe(201);

    const refused = (await api.post(`/v1/inboxes/${from.id}/drafts`, { ...body, subject: "Refused" }, limitedKey)).body;
    const answer = await api.request("POST", `/v1/inboxes/${from.id}/drafts/${refused.id}/send`, { token: limitedKey });
    expect(answer.status).toBe(429);
    expect((await api.get(`/v1/inboxes/${from.id}/drafts/${refused.id}`, limitedKey)).body.status).toBe("draft");

    const sendAt = new Date(limited.clock.now() + 60_000).toISOString();
    const later = (await api.post(`/v1/inboxes/${from.id}/drafts`, { ...body, subject: "Later", sendAt }, limitedKey)).body;
    limited.clock.advance(60_000);
    await limited.app.queues.runDueNow("drafts");
    expect((await api.get(`/v1/inboxes/${from.id}/drafts/${later.id}`, limitedKey)).body).toMatchObject({ status: "scheduled", sendAt, failureReason: null });
    limited.clock.advance(3_600_000);
    await limited.app.queues.runDueNow("drafts");
    expect((await api.get(`/v1/inboxes/${from.id}/drafts/${later.id}`, limitedKey)).body.status).toBe("sent");
    const subjects = ((await api.get(`/v1/inboxes/${to.id}/messages`, limitedKey)).body as { subject: string }[]).map((m) => m.subject).sort();
    expect(subjects).toEqual(["Later", "Now"]);
  });
});
