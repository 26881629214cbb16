// Labels after the send: PATCH .../messages/{messageId} (replace, add and remove, limits at their
// edge, tenancy), the `label` filter of the message and thread lists, and the labels' index.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { migrate } from "../../src/store/sqlite/migrate";
import { sqliteBeforeMigration } from "../store/sqlite-before-migration";
import { databaseOf, onPostgres, seedOrganization, sqliteOnly, type TestServer } from "../harness";
import { createInbox, events, startMessageServer, validSend } from "../messages/helpers";

let server: TestServer;
let key: string;
let inbox: { id: string; email: string };
beforeAll(async () => {
  server = await startMessageServer({ INBOXD_SEND_LIMIT: "10000" });
  key = (await seedOrganization(server.app)).apiKey;
  inbox = await createInbox(server, key);
});
afterAll(() => server.cleanup());

const send = async (overrides: Record<string, unknown> = {}) => {
  const res = await server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, validSend(overrides), key);
  expect(res.status).toBe(201);
  return res.body as { id: string; threadId: string; labels: string[] };
};
const patch = (messageId: string, body: unknown, token = key, inboxId = inbox.id) => server.api.patch(`/v1/inboxes/${inboxId}/messages/${messageId}`, body, token);
const labels = (count: number, prefix = "l") => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

describe("PATCH /v1/inboxes/{inboxId}/messages/{messageId}", () => {
  test("labels replaces them all (each once), and the whole message comes back; no event is recorded", async () => {
    const message = await send({ labels: ["old"] });
    const res = await patch(message.id, { labels: ["b", "a", "b"] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: message.id, labels: ["b", "a"], status: "sent", subject: "Hello" });
    expect(res.body.deliveries).toHaveLength(1);
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(res.body.createdAt));
    expect((await server.api.get(`/v1/inboxes/${inbox.id}/messages/${message.id}`, key)).body.labels).toEqual(["b", "a"]);
    expect(await events(server, "message.updated", message.id)).toEqual([]);
    expect((await patch(message.id, { labels: [] })).body.labels).toEqual([]);
  });

  test("addLabels and removeLabels together: added once, removed after the additions, unknown ones ignored", async () => {
    const message = await send({ labels: ["keep", "drop"] });
    const res = await patch(message.id, { addLabels: ["new", "keep", "new", "both"], removeLabels: ["drop", "never-there", "both"] });
    expect(res.status).toBe(200);
    expect(res.body.labels).toEqual(["keep", "new"]);
    expect((await patch(message.id, { removeLabels: ["keep"] })).body.labels).toEqual(["new"]);
  });

  test("twenty addLabels at once each keep their label: none writes back the labels it read before another's change", async () => {
    const message = await send();
    const added = labels(20, "c");
    const answers = await Promise.all(added.map((label) => patch(message.id, { addLabels: [label] })));
    expect(answers.map((res) => res.status)).toEqual(added.map(() => 200));
    expect((await server.api.get(`/v1/inboxes/${inbox.id}/messages/${message.id}`, key)).body.labels.toSorted()).toEqual(added.toSorted());
  });

  test("labels with addLabels or removeLabels, or none of the three: 422 naming them", async () => {
    const message = await send();
    for (const body of [{ labels: ["a"], addLabels: ["b"] }, { labels: ["a"], removeLabels: ["b"] }]) {
      const res = await patch(message.id, body);
      expect(res.status).toBe(422);
      expect(res.body.error).toContain("not both");
    }
    const none = await patch(message.id, {});
    expect(none.status).toBe(422);
    expect(none.body.error).toContain("one of labels, addLabels or removeLabels");
  });

  test("limits at their edge: 50 labels of 100 characters pass; a 51st, a 101-character or an empty label is 422", async () => {
    const message = await send();
    const long = "x".repeat(100);
    expect((await patch(message.id, { labels: [...labels(49), long] })).body.labels).toHaveLength(50);
    for (const [field, value] of [
      ["labels", labels(51)],
      ["labels", ["x".repeat(101)]],
      ["addLabels", [""]],
      ["removeLabels", labels(51)],
      ["labels", "not-an-array"],
    ] as const) {
      const res = await patch(message.id, { [field]: value });
      expect(res.status).toBe(422);
      expect(res.body.error).toContain(field);
    }
    // At 50, adding one that is there changes nothing; adding a new one would make 51.
    expect((await patch(message.id, { addLabels: ["l0"] })).body.labels).toHaveLength(50);
    const over = await patch(message.id, { addLabels: ["one-more"] });
    expect(over.status).toBe(422);
    expect(over.body.error).toBe("addLabels: a message holds at most 50 labels; this would give it 51");
    expect((await patch(message.id, { addLabels: ["one-more"], removeLabels: ["l0"] })).body.labels).toHaveLength(50);
  });

  test("another organization's message, an unknown one, or one of another inbox: 404", async () => {
    const message = await send();
    const other = await seedOrganization(server.app);
    const otherInbox = await createInbox(server, other.apiKey);
    expect(await patch(message.id, { labels: ["x"] }, other.apiKey)).toMatchObject({ status: 404, body: { error: "Message not found" } });
    expect((await patch(message.id, { labels: ["x"] }, other.apiKey, otherInbox.id)).status).toBe(404);
    expect((await patch("msg_unknown", { labels: ["x"] })).status).toBe(404);
    const secondInbox = await createInbox(server, key);
    expect((await patch(message.id, { labels: ["x"] }, key, secondInbox.id)).status).toBe(404);
    expect((await server.api.get(`/v1/inboxes/${inbox.id}/messages/${message.id}`, key)).body.labels).toEqual([]);
  });
});

describe("?label= on the message and thread lists", () => {
  let labelled: { id: string; threadId: string }[];
  let listInbox: { id: string; email: string };
  beforeAll(async () => {
    listInbox = await createInbox(server, key);
    const sendFrom = async (labels: string[]) =>
      (await server.api.post(`/v1/inboxes/${listInbox.id}/messages/send`, validSend({ labels }), key)).body as { id: string; threadId: string };
    const first = await sendFrom(["invoices"]);
    await sendFrom(["other"]);
    await sendFrom(["Invoices"]);
    const third = await sendFrom([]);
    await patch(third.id, { addLabels: ["invoices"] }, key, listInbox.id);
    const reply = await server.api.post(`/v1/inboxes/${listInbox.id}/messages/${first.id}/reply`, { text: "again", html: "" }, key);
    expect(reply.status).toBe(201);
    labelled = [third, first];
  });

  test("messages: only those with the label (exact case), newest first, paged", async () => {
    const res = await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=invoices`, key);
    expect(res.status).toBe(200);
    expect(res.body.map((m: { id: string }) => m.id)).toEqual(labelled.map((m) => m.id));
    const first = await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=invoices&per=1`, key);
    expect(first.body.map((m: { id: string }) => m.id)).toEqual([labelled[0]!.id]);
    expect(first.headers.get("link")).toContain('rel="next"');
    const second = await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=invoices&per=1&page=2`, key);
    expect(second.body.map((m: { id: string }) => m.id)).toEqual([labelled[1]!.id]);
    expect(second.headers.get("link")).not.toContain('rel="next"');
    expect((await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=nothing`, key)).body).toEqual([]);
  });

  test("a label removed or replaced leaves the filter at once", async () => {
    const message = (await server.api.post(`/v1/inboxes/${listInbox.id}/messages/send`, validSend({ labels: ["transient"] }), key)).body;
    const ids = async () => (await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=transient`, key)).body.map((m: { id: string }) => m.id);
    expect(await ids()).toEqual([message.id]);
    await patch(message.id, { labels: ["permanent"] }, key, listInbox.id);
    expect(await ids()).toEqual([]);
  });

  test("threads: those with at least one message with the label, with X-Total-Count", async () => {
    const res = await server.api.get(`/v1/inboxes/${listInbox.id}/threads?label=invoices`, key);
    expect(res.status).toBe(200);
    // The first message's thread has the newest activity (its reply), then the third's.
    expect(res.body.map((t: { id: string }) => t.id)).toEqual([labelled[1]!.threadId, labelled[0]!.threadId]);
    expect(res.body[0].messageCount).toBe(2);
    expect(res.headers.get("x-total-count")).toBe("2");
    const paged = await server.api.get(`/v1/inboxes/${listInbox.id}/threads?label=invoices&per=1&page=2`, key);
    expect(paged.body.map((t: { id: string }) => t.id)).toEqual([labelled[0]!.threadId]);
    expect(paged.headers.get("x-total-count")).toBe("2");
  });

  test("an empty or 101-character label: 422; another organization's inbox: 404", async () => {
    for (const path of ["messages", "threads"]) {
      expect((await server.api.get(`/v1/inboxes/${listInbox.id}/${path}?label=`, key)).status).toBe(422);
      const long = await server.api.get(`/v1/inboxes/${listInbox.id}/${path}?label=${"x".repeat(101)}`, key);
      expect(long.status).toBe(422);
      expect(long.body.error).toContain("label");
      expect((await server.api.get(`/v1/inboxes/${listInbox.id}/${path}?label=${"x".repeat(100)}`, key)).status).toBe(200);
      expect((await server.api.get(`/v1/inboxes/${listInbox.id}/${path}?label=invoices`, (await seedOrganization(server.app)).apiKey)).status).toBe(404);
    }
  });

  test("label with query: the matches that have the label, for a phrase (index), a short phrase and a regular expression (walks)", async () => {
    const subjects = ["Quarterly invoice", "Quarterly report", "Another invoice"];
    const ids: Record<string, string> = {};
    for (const [i, subject] of subjects.entries()) {
      const sent = await server.api.post(`/v1/inboxes/${listInbox.id}/messages/send`, validSend({ subject, labels: i === 1 ? ["other"] : ["billing"] }), key);
      ids[subject] = sent.body.id;
    }
    const search = async (query: string, label = "billing") =>
      (await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=${label}&query=${encodeURIComponent(query)}`, key)).body.map((m: { subject: string }) => m.subject);
    expect(await search("Quarterly")).toEqual(["Quarterly invoice"]);
    expect(await search("invoice")).toEqual(["Another invoice", "Quarterly invoice"]);
    expect(await search("Qu")).toEqual(["Quarterly invoice"]);
    expect(await search("/^quarterly (invoice|report)$/i")).toEqual(["Quarterly invoice"]);
    expect(await search("/r.port/")).toEqual([]);
    expect(await search("/r.port/", "other")).toEqual(["Quarterly report"]);
    const paged = await server.api.get(`/v1/inboxes/${listInbox.id}/messages?label=billing&query=invoice&per=1`, key);
    expect(paged.body.map((m: { id: string }) => m.id)).toEqual([ids["Another invoice"]]);
    expect(paged.headers.get("link")).toContain('rel="next"');
  });

  test.skipIf(onPostgres)(sqliteOnly("the filters read the labels' index, not every message or thread of the inbox", "reads SQLite's query plans"), () => {
    const plan = (sql: string) =>
      databaseOf(server.app)
        .query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${sql}`)
        .all()
        .map((row) => row.detail)
        .join("; ");
    const messages = plan(
      "SELECT messages.id FROM message_labels JOIN messages ON messages.id = message_labels.message_id WHERE message_labels.inbox_id = 'i' AND message_labels.label = 'l' ORDER BY message_labels.created_at DESC, message_labels.message_id DESC LIMIT 20",
    );
    expect(messages).toContain("SEARCH message_labels USING PRIMARY KEY (inbox_id=? AND label=?)");
    expect(messages).not.toContain("TEMP B-TREE");
    expect(messages).not.toContain("SCAN messages");
    const threads = plan(
      "SELECT * FROM threads WHERE threads.id IN (SELECT DISTINCT thread_id FROM message_labels WHERE inbox_id = 'i' AND label = 'l') ORDER BY last_message_at DESC, threads.rowid DESC LIMIT 20",
    );
    expect(threads).toContain("SEARCH message_labels USING COVERING INDEX message_labels_thread (inbox_id=? AND label=?)");
    expect(threads).toContain("SEARCH threads USING INDEX sqlite_autoindex_threads_1 (id=?)");
  });
});

describe("migration 0150", () => {
  test("indexes the labels of the messages stored before it, each once", () => {
    const db = sqliteBeforeMigration("0150_labels");
    const insert = db.query("INSERT INTO messages (id, organization_id, inbox_id, thread_id, from_address, to_addresses, subject, labels, status, created_at, updated_at) VALUES (?, 'org_1', 'inb_1', 'thr_1', 'x@example.com', '[]', 'S', ?, 'received', ?, ?)");
    insert.run("msg_1", JSON.stringify(["a", "b", "a"]), 5, 5);
    insert.run("msg_2", "[]", 6, 6);
    migrate(db, 0);
    expect(db.query("SELECT label, message_id AS messageId, thread_id AS threadId, created_at AS createdAt FROM message_labels ORDER BY label").all()).toEqual([
      { label: "a", messageId: "msg_1", threadId: "thr_1", createdAt: 5 },
      { label: "b", messageId: "msg_1", threadId: "thr_1", createdAt: 5 },
    ]);
    db.exec("DELETE FROM messages WHERE id = 'msg_1'");
    expect(db.query("SELECT count(*) AS n FROM message_labels").get()).toEqual({ n: 0 });
    db.close();
  });
});
