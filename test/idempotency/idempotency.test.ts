import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { queryRow, queryRows, seedOrganization, type ApiResponse, type TestServer } from "../harness";
import { beginIdempotent, completeIdempotent } from "../../src/idempotency/keys";
import { createInbox, startMessageServer, validSend } from "../messages/helpers";

let server: TestServer;
let key: string;
let seeded: { organizationId: string; apiKey: string };
let inbox: { id: string; email: string };
let colleague: { id: string; email: string };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  seeded = await seedOrganization(server.app);
  key = seeded.apiKey;
  inbox = await createInbox(server, key);
  colleague = await createInbox(server, key);
});
afterAll(() => server.cleanup());

let keys = 0;
const newKey = () => `key-${++keys}-${crypto.randomUUID()}`;
const post = (path: string, body: unknown, idempotencyKey?: string, token = key): Promise<ApiResponse> =>
  server.api.request("POST", path, { body, token, headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey } });
const sendPath = (inboxId = inbox.id) => `/v1/inboxes/${inboxId}/messages/send`;
const sentWithSubject = async (subject: string) => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM messages WHERE subject = ? AND status != 'received'", subject))!.n;

describe("Idempotency-Key on send", () => {
  test("identical requests racing each other: exactly one message; the others are told it is running (409) or get its response", async () => {
    const idempotencyKey = newKey();
    const body = validSend({ to: [colleague.email], subject: "Raced" });
    const answers = await Promise.all(Array.from({ length: 12 }, () => post(sendPath(), body, idempotencyKey)));
    expect(await sentWithSubject("Raced")).toBe(1);
    const created = answers.filter((a) => a.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true);
    expect(created.filter((a) => a.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    for (const answer of created) expect(answer.body.id).toBe(created[0]!.body.id);
    for (const answer of answers.filter((a) => a.status === 409)) expect(answer.body).toEqual({ error: "Idempotency-Key: a request with this key is still being processed; retry shortly" });
  });

  test("a retry after the first finished gets its status and body again, marked replayed, and creates nothing", async () => {
    const idempotencyKey = newKey();
    const body = validSend({ to: [colleague.email], subject: "Replayed" });
    const first = await post(sendPath(), body, idempotencyKey);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const retry = await post(sendPath(), body, idempotencyKey);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("access-control-expose-headers")).toContain("Idempotent-Replayed");
    expect(retry.body).toEqual(first.body);
    expect(await sentWithSubject("Replayed")).toBe(1);
    // Without the key, the same body is a new send.
    expect((await post(sendPath(), body)).status).toBe(201);
    expect(await sentWithSubject("Replayed")).toBe(2);
  });

  test("a large response (an attachment of 400 KB, staged as a blob) is kept and replayed whole", async () => {
    const idempotencyKey = newKey();
    const content = Buffer.alloc(400 * 1024, 3).toString("base64");
    const body = validSend({ to: [colleague.email], subject: "Large", attachments: [{ content, name: "large.bin" }] });
    const first = await post(sendPath(), body, idempotencyKey);
    const retry = await post(sendPath(), body, idempotencyKey);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body).toEqual(first.body);
    expect(retry.body.attachments[0].content).toBe(content);
    const staged = await queryRows<{ blobId: string | null }>(server.app, "SELECT blob_id AS \"blobId\" FROM idempotency_keys WHERE length(response_body) = 0");
    expect(staged.some((row) => row.blobId !== null)).toBe(true);
  });

  test("the same key with another body or path is 422, and runs nothing", async () => {
    const idempotencyKey = newKey();
    expect((await post(sendPath(), validSend({ to: [colleague.email], subject: "Keyed" }), idempotencyKey)).status).toBe(201);
    const otherBody = await post(sendPath(), validSend({ to: [colleague.email], subject: "Keyed, changed" }), idempotencyKey);
    expect(otherBody.status).toBe(422);
    expect(otherBody.body).toEqual({ error: "Idempotency-Key: already used in the last 24 hours for a different request (method, path or body)" });
    expect((await post(sendPath(colleague.id), validSend({ to: [inbox.email], subject: "Keyed" }), idempotencyKey)).status).toBe(422);
    expect(await sentWithSubject("Keyed, changed")).toBe(0);
  });

  test("keys are per organization: another one's same key is independent", async () => {
    const idempotencyKey = newKey();
    const other = (await seedOrganization(server.app)).apiKey;
    const otherInbox = await createInbox(server, other);
    expect((await post(sendPath(), validSend({ to: [colleague.email], subject: "Mine" }), idempotencyKey)).status).toBe(201);
    const theirs = await post(sendPath(otherInbox.id), validSend({ to: [colleague.email], subject: "Theirs" }), idempotencyKey, other);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(await sentWithSubject("Theirs")).toBe(1);
  });

  test("a replayed send carries the RateLimit headers as they stand now, as its first response did", async () => {
    const idempotencyKey = newKey();
    const first = await post(sendPath(), validSend({ to: [colleague.email], subject: "Counted once" }), idempotencyKey);
    expect(first.status).toBe(201);
    const replayed = await post(sendPath(), validSend({ to: [colleague.email], subject: "Counted once" }), idempotencyKey);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    // Nothing was counted again: the same limit, policy and remaining sends; the reset is a moment later.
    for (const name of ["ratelimit-limit", "ratelimit-remaining", "ratelimit-policy"]) expect({ name, value: replayed.headers.get(name) }).toEqual({ name, value: first.headers.get(name) });
    expect(Number(replayed.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
  });

  test("the key: 1 to 255 printable ASCII characters (422 past either edge); a quoted Structured Fields string is the same key", async () => {
    const body = (subject: string) => validSend({ to: [colleague.email], subject });
    expect((await post(sendPath(), body("Long key"), "k".repeat(255))).status).toBe(201);
    const tooLong = await post(sendPath(), body("Too long key"), "k".repeat(256));
    expect(tooLong.status).toBe(422);
    expect(tooLong.body).toEqual({ error: "idempotency-key: must be 1 to 255 printable ASCII characters" });
    expect((await post(sendPath(), body("Empty key"), "")).status).toBe(422);
    expect(await post(sendPath(), body("Empty key"), '""')).toMatchObject({ status: 422, body: { error: "idempotency-key: must be 1 to 255 printable ASCII characters" } });
    expect((await post(sendPath(), body("Latin key"), "cl\u00e9")).status).toBe(422);
    expect((await sentWithSubject("Too long key")) + (await sentWithSubject("Empty key")) + (await sentWithSubject("Latin key"))).toBe(0);

    const bare = newKey();
    expect((await post(sendPath(), body("Quoted"), bare)).status).toBe(201);
    const quoted = await post(sendPath(), body("Quoted"), `"${bare}"`);
    expect(quoted.headers.get("idempotent-replayed")).toBe("true");
    expect(await sentWithSubject("Quoted")).toBe(1);
    // The edge is the key's, unquoted.
    expect((await post(sendPath(), body("Long key"), `"${"k".repeat(255)}"`)).headers.get("idempotent-replayed")).toBe("true");
    expect(await post(sendPath(), body("Too long key"), `"${"k".repeat(256)}"`)).toMatchObject({ status: 422, body: { error: "idempotency-key: must be 1 to 255 printable ASCII characters" } });
    expect(await post(sendPath(), body("Too long key"), "k".repeat(2 * 255 + 3))).toMatchObject({ status: 422 });
    expect(await sentWithSubject("Long key")).toBe(1);
  });

  test("a refusal is the request's answer and is replayed (404, 422); a retry after a 429 runs again", async () => {
    const idempotencyKey = newKey();
    const missing = sendPath("inb_unknown");
    expect((await post(missing, validSend(), idempotencyKey)).status).toBe(404);
    const again = await post(missing, validSend(), idempotencyKey);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: "Inbox not found" });
    expect(again.headers.get("idempotent-replayed")).toBe("true");

    const invalidKey = newKey();
    const badAddress = validSend({ to: ["Bad <address"] });
    expect((await post(sendPath(), badAddress, invalidKey)).status).toBe(422);
    expect((await post(sendPath(), badAddress, invalidKey)).headers.get("idempotent-replayed")).toBe("true");
  });

  test("keys expire after 24 hours by the clock: until then replayed, then free for another request", async () => {
    const idempotencyKey = newKey();
    const first = await post(sendPath(), validSend({ to: [colleague.email], subject: "Day one" }), idempotencyKey);
    server.clock.advance(24 * 3_600_000 - 60_000);
    const late = await post(sendPath(), validSend({ to: [colleague.email], subject: "Day one" }), idempotencyKey);
    expect(late.headers.get("idempotent-replayed")).toBe("true");
    expect(late.body.id).toBe(first.body.id);
    server.clock.advance(60_000);
    const next = await post(sendPath(), validSend({ to: [colleague.email], subject: "Day two" }), idempotencyKey);
    expect(next.status).toBe(201);
    expect(next.headers.get("idempotent-replayed")).toBeNull();
    // Expired keys are purged as new ones come.
    const stale = (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM idempotency_keys WHERE expires_at <= ?", server.clock.now()))!.n;
    expect(stale).toBe(0);
  });
});

describe("Idempotency-Key on the other creating POSTs", () => {
  test("reply and forward", async () => {
    const original = (await post(sendPath(), validSend({ to: [colleague.email], subject: "To answer" }))).body;
    for (const [action, body] of [["reply", { text: "Answer", html: "" }], ["forward", { to: [colleague.email], text: "FYI" }]] as const) {
      const idempotencyKey = newKey();
      const path = `/v1/inboxes/${inbox.id}/messages/${original.id}/${action}`;
      const first = await post(path, body, idempotencyKey);
      expect(first.status).toBe(201);
      const retry = await post(path, body, idempotencyKey);
      expect(retry.headers.get("idempotent-replayed")).toBe("true");
      expect(retry.body.id).toBe(first.body.id);
    }
    expect(await sentWithSubject("Re: To answer")).toBe(1);
    expect(await sentWithSubject("Fwd: To answer")).toBe(1);
  });

  test("inbox creation, with or without a body", async () => {
    const count = async () => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM inboxes"))!.n;
    const before = await count();
    const idempotencyKey = newKey();
    const first = await post("/v1/inboxes", { name: "Once" }, idempotencyKey);
    const retry = await post("/v1/inboxes", { name: "Once" }, idempotencyKey);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    const bare = newKey();
    const empty = await server.api.request("POST", "/v1/inboxes", { token: key, headers: { "idempotency-key": bare } });
    const emptyAgain = await server.api.request("POST", "/v1/inboxes", { token: key, headers: { "idempotency-key": bare } });
    expect(emptyAgain.body.id).toBe(empty.body.id);
    expect(await count()).toBe(before + 2);
  });

  test("draft send: a retry gets the sent message again instead of 409", async () => {
    const draft = (await post(`/v1/inboxes/${inbox.id}/drafts`, validSend({ to: [colleague.email], subject: "Draft once" }))).body;
    const path = `/v1/inboxes/${inbox.id}/drafts/${draft.id}/send`;
    const idempotencyKey = newKey();
    const first = await post(path, undefined, idempotencyKey);
    expect(first.status).toBe(201);
    const retry = await post(path, undefined, idempotencyKey);
    expect(retry.status).toBe(201);
    expect(retry.body.id).toBe(first.body.id);
    expect((await post(path, undefined)).status).toBe(409);
    expect(await sentWithSubject("Draft once")).toBe(1);
  });
});

describe("Idempotency-Key and a deleted inbox", () => {
  test("a kept response (attachment content included) goes with the inbox it was sent from: a retry after the delete is the missing inbox's 404", async () => {
    const sender = await createInbox(server, key);
    const idempotencyKey = newKey();
    const body = validSend({ to: [colleague.email], subject: "Sent, then deleted", attachments: [{ content: Buffer.alloc(400 * 1024, 5).toString("base64"), name: "kept.bin" }] });
    expect((await post(sendPath(sender.id), body, idempotencyKey)).status).toBe(201);
    const kept = (await queryRow<{ blobId: string }>(server.app, "SELECT blob_id AS \"blobId\" FROM idempotency_keys WHERE inbox_id = ?", sender.id))!;
    expect(kept.blobId).not.toBeNull();
    expect((await server.api.request("DELETE", `/v1/inboxes/${sender.id}`, { token: key })).status).toBe(200);
    expect((await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM blob_chunks WHERE blob_id = ?", kept.blobId))!.n).toBe(0);
    const retry = await post(sendPath(sender.id), body, idempotencyKey);
    expect({ status: retry.status, body: retry.body, replayed: retry.headers.get("idempotent-replayed") }).toEqual({ status: 404, body: { error: "Inbox not found" }, replayed: null });
  });

  test("a request still running when its inbox is deleted keeps no response when it ends, large or small", async () => {
    const sender = await createInbox(server, key);
    const chunks = async () => (await queryRow<{ n: number }>(server.app, "SELECT count(*) AS n FROM blob_chunks"))!.n;
    const before = await chunks();
    for (const [n, size] of [[1, 400 * 1024], [2, 10]] as const) {
      const running = `${newKey()}-${n}`;
      expect(await beginIdempotent(server.app, seeded.organizationId, running, "fingerprint", sender.id)).toEqual({ first: true });
      await server.app.store.transaction((tx) => tx.idempotencyKeys.forgetInbox(seeded.organizationId, sender.id));
      await completeIdempotent(server.app, seeded.organizationId, running, 201, JSON.stringify({ content: "x".repeat(size) }));
      expect(await queryRow(server.app, "SELECT idempotency_key FROM idempotency_keys WHERE idempotency_key = ?", running)).toBeUndefined();
    }
    expect(await chunks()).toBe(before);
  });
});

describe("a retry after the send limit refused the first try", () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startMessageServer({ INBOXD_SEND_LIMIT: "1" });
  });
  afterAll(() => limited.cleanup());

  test("429 is not kept: once the window has room, the same key sends", async () => {
    limited.clock.advance(3_600_000 - (limited.clock.now() % 3_600_000) + 1_000);
    const limitedKey = (await seedOrganization(limited.app)).apiKey;
    const from = await createInbox(limited, limitedKey);
    const send = (idempotencyKey?: string) =>
      limited.api.request("POST", `/v1/inboxes/${from.id}/messages/send`, { token: limitedKey, body: validSend({ subject: "Limited" }), headers: idempotencyKey ? { "idempotency-key": idempotencyKey } : {} });
    expect((await send()).status).toBe(201);
    const idempotencyKey = newKey();
    expect((await send(idempotencyKey)).status).toBe(429);
    limited.clock.advance(3_600_000);
    const retry = await send(idempotencyKey);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
  });
});
