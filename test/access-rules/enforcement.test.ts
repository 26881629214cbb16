// Access rules in force, end to end: inbound mail over a real SMTP socket refused with 550 5.7.1
// at RCPT (envelope sender blocked) or after the data (From header blocked, or no allow entry
// matches), nothing stored and no bounce queued; an allowed sender gets through; outbound, a
// blocked recipient is rejected with the reason while the others of the same send are delivered
// to the remote MX (an SMTP sink on loopback), and an inbox of this server that does not take mail
// from the sender gets no copy.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually, queryRow } from "../harness";
import { startOutboundWorld, type OutboundWorld } from "../outbound/world";
import { openSession, type RawSession } from "../smtp/raw-client";

let world: OutboundWorld;
let second: { id: string; email: string };
beforeAll(async () => {
  world = await startOutboundWorld();
  second = (await world.server.api.post("/v1/inboxes", {}, world.apiKey)).body;
  world.mx("remote.example");
  world.mx("blocked.example");
});
afterAll(() => world.close());

const rule = async (body: Record<string, unknown>) => {
  const res = await world.server.api.post("/v1/access-rules", body, world.apiKey);
  expect(res.status).toBe(201);
  return res.body as { id: string };
};
const removeRule = async (id: string) => expect((await world.server.api.delete(`/v1/access-rules/${id}`, world.apiKey)).status).toBe(200);
const count = async (sql: string) => (await queryRow<{ n: number }>(world.server.app, sql))!.n;
const subjects = async (inboxId: string) =>
  (await world.server.api.get(`/v1/inboxes/${inboxId}/messages?per=100`, world.apiKey)).body.map((message: { subject: string }) => message.subject) as string[];

const message = (from: string, subject: string) => `From: ${from}\r\nTo: someone@inboxd.test\r\nSubject: ${subject}\r\nMessage-ID: <${crypto.randomUUID()}@sender.example>\r\n\r\nHello.\r\n`;

/** One SMTP transaction: the replies to RCPT TO, and to the data when some recipient was taken. */
async function transact(mailFrom: string, rcptTo: string[], data: string): Promise<{ rcpt: string[]; data?: string }> {
  const session: RawSession = await openSession(world.server.smtpPort);
  try {
    expect((await session.command("EHLO client.example")).code).toBe(250);
    const smtpUtf8 = /^[\x00-\x7f]*$/.test(mailFrom) ? "" : " SMTPUTF8";
    expect((await session.command(`MAIL FROM:<${mailFrom}>${smtpUtf8}`)).code).toBe(250);
    const rcpt = [];
    for (const to of rcptTo) rcpt.push((await session.command(`RCPT TO:<${to}>`)).text);
    if (!rcpt.some((reply) => reply.startsWith("250"))) return { rcpt };
    expect((await session.command("DATA")).code).toBe(354);
    session.write(`${data}.\r\n`);
    return { rcpt, data: (await session.reply(10_000)).text };
  } finally {
    session.end();
  }
}

describe("receiving", () => {
  test("an envelope sender on a blocked domain (or a subdomain of it) is refused at RCPT with 550 5.7.1: nothing stored, no bounce", async () => {
    const blocked = await rule({ direction: "receive", action: "block", value: "spam.example" });
    const before = { messages: await count("SELECT count(*) AS n FROM messages"), deliveries: await count("SELECT count(*) AS n FROM deliveries") };
    // A local part over 64 octets (RFC 5321 §4.5.3.1.1), as SRS return paths have, is on its domain all the same.
    for (const sender of ["bad@spam.example", "Bad@Mail.Spam.Example", `${"s".repeat(65)}@spam.example`, `${"s".repeat(200)}@Mail.Spam.Example`]) {
      const answer = await transact(sender, [world.inbox.email], message(sender, "Blocked at RCPT"));
      expect(answer.rcpt[0]).toStartWith("550 5.7.1 ");
      expect(answer.data).toBeUndefined();
    }
    // Another sender on another domain passes.
    const passed = await transact("friend@spam-free.example", [world.inbox.email], message("friend@spam-free.example", "Not blocked"));
    expect(passed.data).toStartWith("250 ");
    await eventually("the unblocked message", () => subjects(world.inbox.id), (list) => list.includes("Not blocked"));
    expect(await subjects(world.inbox.id)).not.toContain("Blocked at RCPT");
    expect(await count("SELECT count(*) AS n FROM messages")).toBe(before.messages + 1);
    expect(await count("SELECT count(*) AS n FROM deliveries")).toBe(before.deliveries);
    await removeRule(blocked.id);
  });

  test("a blocked From header behind an unblocked envelope is refused after the data with 550 5.7.1, for that inbox only", async () => {
    const blocked = await rule({ direction: "receive", action: "block", value: "ceo@spoof.example", inboxId: world.inbox.id });
    const refused = await transact("bounces@esp.example", [world.inbox.email], message("The CEO <ceo@spoof.example>", "From header blocked"));
    expect(refused.rcpt[0]).toStartWith("250 ");
    expect(refused.data).toStartWith("550 5.7.1 ");

    // Every way RFC 5322 lets a From field name the mailbox, as the stored message would show it.
    for (const from of ["ceo@spoof.example (The CEO)", "Board: ceo@spoof.example;", '"x" ceo@spoof.example', "ceo@spoof.example\r\n (folded)", "=?utf-8?Q?The_CEO?= <ceo@spoof.example>", `=?utf-8?B?${Buffer.from("The CEO <ceo@spoof.example>").toString("base64")}?=`]) {
      expect({ from, reply: (await transact("bounces@esp.example", [world.inbox.email], message(from, "From header blocked"))).data }).toEqual({ from, reply: expect.stringMatching(/^550 5\.7\.1 /) });
    }

    // To both inboxes: the other one, without the entry, gets its copy and the 250 answers for it.
    const shared = await transact("bounces@esp.example", [world.inbox.email, second.email], message("ceo@spoof.example", "Shared recipients"));
    expect(shared.data).toStartWith("250 ");
    await eventually("the second inbox's copy", () => subjects(second.id), (list) => list.includes("Shared recipients"));
    expect(await subjects(world.inbox.id)).not.toContain("Shared recipients");
    expect(await subjects(world.inbox.id)).not.toContain("From header blocked");
    expect(await count("SELECT count(*) AS n FROM deliveries")).toBe(0);
    await removeRule(blocked.id);
  });

  test("a From mailbox with a UTF-8 local part (RFC 6531), as written or in encoded words, is matched by a domain block entry", async () => {
    const blocked = await rule({ direction: "receive", action: "block", value: "spoof.example", inboxId: world.inbox.id });
    for (const from of ["Spammer <pé@spoof.example>", `=?utf-8?B?${Buffer.from("Spammer <pé@spoof.example>").toString("base64")}?=`]) {
      expect({ from, reply: (await transact("bounces@esp.example", [world.inbox.email], message(from, "International From"))).data }).toEqual({ from, reply: expect.stringMatching(/^550 5\.7\.1 /) });
    }
    await removeRule(blocked.id);
  });

  test("an address entry names a sender whose local part is in UTF-8, as its messages show it: refused by envelope and by From", async () => {
    const blocked = await rule({ direction: "receive", action: "block", value: "pé@spoof.example", inboxId: world.inbox.id });
    expect((await transact("bounces@esp.example", [world.inbox.email], message("Spammer <pé@spoof.example>", "International From"))).data).toMatch(/^550 5\.7\.1 /);
    expect((await transact("pé@spoof.example", [world.inbox.email], message("Other <other@spoof.example>", "By its envelope"))).rcpt).toEqual([expect.stringMatching(/^550 5\.7\.1 /)]);
    expect((await transact("other@spoof.example", [world.inbox.email], message("Other <other@spoof.example>", "Someone else"))).data).toMatch(/^250 /);
    await removeRule(blocked.id);
  });

  test("with an allow entry, only a sender it matches (by envelope or From) gets in; block still wins over it", async () => {
    const allowed = await rule({ direction: "receive", action: "allow", value: "partner.example", inboxId: second.id });
    const blockedOne = await rule({ direction: "receive", action: "block", value: "intern@partner.example", inboxId: second.id });
    const stranger = await transact("someone@stranger.example", [second.email], message("someone@stranger.example", "Stranger"));
    expect(stranger.rcpt[0]).toStartWith("250 ");
    expect(stranger.data).toStartWith("550 5.7.1 ");
    const viaEsp = await transact("bounces@esp.example", [second.email], message("Partner <sales@partner.example>", "Partner via an ESP"));
    expect(viaEsp.data).toStartWith("250 ");
    const direct = await transact("ops@eu.partner.example", [second.email], message("ops@eu.partner.example", "Partner subdomain"));
    expect(direct.data).toStartWith("250 ");
    const srs = `SRS0=${"x".repeat(70)}@partner.example`;
    expect((await transact(srs, [second.email], message("Forwarded <someone@elsewhere.example>", "Partner's long return path"))).data).toStartWith("250 ");
    const intern = await transact("intern@partner.example", [second.email], message("intern@partner.example", "Intern"));
    expect(intern.rcpt[0]).toStartWith("550 5.7.1 ");
    // An organization-wide block holds for the inbox whose own allow entry matches the sender.
    const everywhere = await rule({ direction: "receive", action: "block", value: "ceo@partner.example" });
    expect((await transact("ceo@partner.example", [second.email], message("ceo@partner.example", "Blocked org-wide"))).rcpt[0]).toStartWith("550 5.7.1 ");
    await removeRule(everywhere.id);
    await eventually("the partner's messages", () => subjects(second.id), (list) => list.includes("Partner via an ESP") && list.includes("Partner subdomain") && list.includes("Partner's long return path"));
    expect(await subjects(second.id)).not.toContain("Stranger");
    // The first inbox has no allow entry: the stranger reaches it.
    expect((await transact("someone@stranger.example", [world.inbox.email], message("someone@stranger.example", "Stranger elsewhere"))).data).toStartWith("250 ");
    expect(await count("SELECT count(*) AS n FROM deliveries")).toBe(0);
    await removeRule(allowed.id);
    await removeRule(blockedOne.id);
  });
});

describe("sending", () => {
  test("a blocked recipient is rejected with the rule in the reason; the others of the send are delivered", async () => {
    const blocked = await rule({ direction: "send", action: "block", value: "blocked.example" });
    const sent = await world.send({ to: ["ok@remote.example", "no@blocked.example"], subject: "Partly blocked" });
    const byRecipient = new Map(sent.deliveries.map((delivery: { recipient: string }) => [delivery.recipient, delivery]));
    expect(byRecipient.get("no@blocked.example")).toMatchObject({
      status: "rejected",
      attempts: 0,
      lastResponse: `rejected: no@blocked.example is blocked by the send rule ${blocked.id} (block blocked.example); DELETE /v1/access-rules/${blocked.id} to send to it`,
    });
    expect(byRecipient.get("ok@remote.example")).toMatchObject({ status: "queued" });
    await eventually("the delivery to ok@remote.example", () => world.message(sent.id), (message) => message.deliveries.find((d: { recipient: string }) => d.recipient === "ok@remote.example").status === "delivered");
    expect(world.rcptLog).toContain("ok@remote.example");
    expect(world.rcptLog).not.toContain("no@blocked.example");
    expect(await world.events(sent.id)).toContain("message.rejected");
    await removeRule(blocked.id);
  });

  test("with a send allow entry on the inbox, only the addresses it matches are sent to", async () => {
    const allowed = await rule({ direction: "send", action: "allow", value: "ok@remote.example", inboxId: world.inbox.id });
    const sent = await world.send({ to: ["ok@remote.example"], cc: ["other@remote.example"], subject: "Allow list" });
    const statuses = Object.fromEntries(sent.deliveries.map((delivery: { recipient: string; status: string }) => [delivery.recipient, delivery.status]));
    expect(statuses).toEqual({ "ok@remote.example": "queued", "other@remote.example": "rejected" });
    expect(sent.deliveries.find((d: { recipient: string }) => d.recipient === "other@remote.example").lastResponse).toContain("on no send allow list");
    // Another inbox of the organization is not bound by this inbox's entry.
    const fromSecond = await world.server.api.post(`/v1/inboxes/${second.id}/messages/send`, { to: ["other@remote.example"], subject: "From the second", text: "x", html: "" }, world.apiKey);
    expect(fromSecond.body.deliveries[0].status).toBe("queued");
    await removeRule(allowed.id);
  });

  test("an inbox of this server whose receive rules refuse the sender gets no copy: its delivery is rejected", async () => {
    const blocked = await rule({ direction: "receive", action: "block", value: world.inbox.email, inboxId: second.id });
    const sent = await world.send({ to: [second.email], subject: "Local but blocked" });
    expect(sent.deliveries).toEqual([expect.objectContaining({ recipient: second.email, status: "rejected", lastResponse: `rejected: ${second.email}: 550 5.7.1 The recipient does not accept mail from this sender` })]);
    expect(await subjects(second.id)).not.toContain("Local but blocked");
    await removeRule(blocked.id);
    await world.send({ to: [second.email], subject: "Local and welcome" });
    expect(await subjects(second.id)).toContain("Local and welcome");
  });
});
