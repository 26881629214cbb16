// Two compiled inboxd appliances mail each other over real SMTP: a message with an attachment from
// alpha's API reaches beta intact and authenticated, beta's reply lands in alpha's thread, delivery
// and bounce outcomes come back to alpha with their webhooks, and an independent DKIM verifier
// accepts what each one sent.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { dkimverify, dkimverifyMissing } from "../peers/dkimverify";
import { binaryMissing, signingDomains, startAppliances, waitFor, type Appliances } from "./appliances";

let world: Appliances;
let alice: { id: string; email: string };
/** alpha's first message to beta, as each side stores it. */
let sent: any;
let arrived: any;
let reply: any;
let answer: any;

describe.skipIf(binaryMissing !== undefined)(`two appliances mail each other${binaryMissing ? ` — skipped: ${binaryMissing}` : ""}`, () => {
  beforeAll(async () => {
    world = await startAppliances();
    alice = await world.alpha.call("POST", "/v1/inboxes", { name: "Alice Example", email: "alice@alpha.test" });
  }, 30_000);
  afterAll(() => world?.close());

  test("inboxd dns prints every record a domain and its mail host need", async () => {
    for (const { domain, hostname, zone } of [world.alpha, world.beta]) {
      expect(zone).toContain(`${domain}.\t3600\tIN\tMX\t10 ${hostname}.`);
      expect(zone).toContain(`${domain}.\t3600\tIN\tTXT\t"v=spf1 ip4:127.0.0.1 -all"`);
      expect(zone).toMatch(new RegExp(`_domainkey\\.${domain}\\.\\t3600\\tIN\\tTXT\\t"v=DKIM1; k=rsa; p=`));
      expect(zone).toMatch(new RegExp(`_domainkey\\.${domain}\\.\\t3600\\tIN\\tTXT\\t"v=DKIM1; k=ed25519; p=`));
      expect(zone).toContain(`_dmarc.${domain}.\t3600\tIN\tTXT\t"v=DMARC1; p=quarantine; adkim=r; aspf=r"`);
      expect(zone).toContain(`${hostname}.\t3600\tIN\tTXT\t"v=spf1 ip4:127.0.0.1 -all"`);
      expect(zone).toContain(`${hostname}.\t3600\tIN\tA\t127.0.0.1`);
    }
    const health = await world.beta.api.get("/health");
    expect(health.body).toEqual({ healthy: true, environment: "test" });
  });

  const attachment = randomBytes(48 * 1024);

  test("a message with an attachment sent through alpha's API arrives at beta over SMTP, intact and authenticated", async () => {
    const { alpha, beta } = world;
    sent = await alpha.send(alice.id, {
      to: [beta.account.inbox.email],
      subject: "Quarterly report, attached",
      text: "Hello Beta,\n\nthe report is attached. Grüße!\n",
      html: "<p>Hello Beta,</p><p>the report is attached. Grüße!</p>",
      attachments: [{ name: "report-Q3.bin", contentType: "application/octet-stream", content: attachment.toString("base64") }],
    });
    expect(sent).toMatchObject({ status: "sent", from: "alice@alpha.test", to: [beta.account.inbox.email] });
    expect(sent.deliveries).toMatchObject([{ recipient: beta.account.inbox.email, status: "queued" }]);

    arrived = await beta.received(beta.account.inbox.id, "Quarterly report, attached");
    expect(arrived).toMatchObject({
      status: "received",
      from: "alice@alpha.test",
      to: [beta.account.inbox.email],
      text: "Hello Beta,\n\nthe report is attached. Grüße!\n",
      html: "<p>Hello Beta,</p><p>the report is attached. Grüße!</p>",
      authentication: { spf: "pass", dkim: "pass", dmarc: "pass" },
    });
    expect(arrived.attachments).toHaveLength(1);
    expect(arrived.attachments[0]).toMatchObject({ name: "report-Q3.bin", contentType: "application/octet-stream", size: attachment.length });
    expect(Buffer.from(arrived.attachments[0].content, "base64").equals(attachment)).toBe(true);

    const received = await beta.event("message.received", arrived.id);
    expect(received.inboxId).toBe(beta.account.inbox.id);
    expect(received.payload).toMatchObject({ id: arrived.id, subject: "Quarterly report, attached", status: "received" });
    expect(received.data).toEqual(received.payload);
  });

  test("alpha's message becomes delivered, with message.delivered, once beta accepted it", async () => {
    const delivered = await world.alpha.messageWhen(alice.id, sent.id, "delivered", (message) => message.status === "delivered");
    expect(delivered.deliveries).toMatchObject([{ recipient: world.beta.account.inbox.email, status: "delivered", attempts: 1 }]);
    expect(delivered.deliveries[0].lastResponse).toMatch(/^250 /);
    const event = await world.alpha.event("message.delivered", sent.id);
    expect(event.payload).toMatchObject({ id: sent.id, status: "delivered" });
    expect(world.alpha.events().find((e) => e.event === "message.sent" && e.messageId === sent.id)).toBeDefined();
  });

  test("beta replies through its API; alpha receives the reply in the thread of the original, authenticated", async () => {
    const { alpha, beta } = world;
    reply = await beta.call("POST", `/v1/inboxes/${beta.account.inbox.id}/messages/${arrived.id}/reply`, { text: "Thanks, got it.", html: "<p>Thanks, got it.</p>" });
    expect(reply).toMatchObject({ threadId: arrived.threadId, to: ["alice@alpha.test"], subject: "Re: Quarterly report, attached" });

    answer = await alpha.received(alice.id, "Re: Quarterly report, attached");
    expect(answer).toMatchObject({
      status: "received",
      threadId: sent.threadId,
      text: "Thanks, got it.",
      authentication: { spf: "pass", dkim: "pass", dmarc: "pass" },
    });
    expect(answer.from).toBe(beta.account.inbox.email);
    const thread = await alpha.call("GET", `/v1/inboxes/${alice.id}/threads/${sent.threadId}`);
    expect(thread.messages.map((message: any) => [message.id, message.status])).toEqual([
      [sent.id, "delivered"],
      [answer.id, "received"],
    ]);
    await alpha.event("message.received", answer.id);
    await beta.messageWhen(beta.account.inbox.id, reply.id, "delivered", (message) => message.status === "delivered");
  });

  test("the conversation goes on: alpha answers the reply, and beta files it in the same thread", async () => {
    const { alpha, beta } = world;
    const again = await alpha.call("POST", `/v1/inboxes/${alice.id}/messages/${answer.id}/reply`, { text: "You are welcome.", html: "<p>You are welcome.</p>" });
    expect(again).toMatchObject({ threadId: sent.threadId, to: [beta.account.inbox.email], subject: "Re: Quarterly report, attached" });
    const thread = await waitFor("beta's thread to hold three messages", 15_000, async () => {
      const current = await beta.call("GET", `/v1/inboxes/${beta.account.inbox.id}/threads/${arrived.threadId}`);
      return current.messages.length === 3 ? current : undefined;
    });
    expect(thread.messages.map((message: any) => [message.status, message.text])).toEqual([
      ["received", arrived.text],
      ["delivered", "Thanks, got it."],
      ["received", "You are welcome."],
    ]);
  });

  test("a message to an address beta does not have is refused at RCPT: alpha's message bounces, with message.bounced", async () => {
    const { alpha } = world;
    const lost = await alpha.send(alice.id, { to: ["nobody-here@beta.test"], subject: "Anyone there?", text: "Hello?", html: "<p>Hello?</p>" });
    const bounced = await alpha.messageWhen(alice.id, lost.id, "bounced", (message) => message.status === "bounced");
    expect(bounced.deliveries).toMatchObject([{ recipient: "nobody-here@beta.test", status: "bounced", attempts: 1 }]);
    expect(bounced.deliveries[0].lastResponse).toMatch(/^550 5\.1\.1/);
    const event = await alpha.event("message.bounced", lost.id);
    expect(event.payload).toMatchObject({ id: lost.id, status: "bounced" });
  });

  test.skipIf(dkimverifyMissing !== undefined)(`dkimverify (python3-dkim) accepts both signatures of what each appliance sent${dkimverifyMissing ? ` — skipped: ${dkimverifyMissing}` : ""}`, async () => {
    const { alpha, beta, dns } = world;
    for (const [source, receiver, messageId] of [[alpha, beta, arrived.id], [beta, alpha, answer.id]] as const) {
      const asSent = withoutReceiverTrace(await receiver.rawSource(messageId), receiver.hostname);
      expect(signingDomains(asSent)).toEqual([source.domain, source.domain]);
      for (const index of [0, 1]) {
        const result = await dkimverify(asSent, index, dns.port);
        expect(result, `signature ${index} of ${source.name}'s message`).toMatchObject({ exitCode: 0, output: "signature ok" });
      }
    }
    // Four runs of a Python verifier, each starting its interpreter: seconds on a busy machine.
  }, 30_000);
});

/**
 * The message as the sender put it on the wire: the receiving appliance adds its Return-Path,
 * Authentication-Results and Received fields on top (README, Inbound SMTP), nothing else.
 */
function withoutReceiverTrace(raw: Buffer, receiverHostname: string): Buffer {
  const text = raw.toString("latin1");
  const fields = /^Return-Path: <[^\r\n]*>\r\nAuthentication-Results: [^\r\n]*\r\n(?:[ \t][^\r\n]*\r\n)*Received: [^\r\n]*\r\n(?:[ \t][^\r\n]*\r\n)*/.exec(text);
  if (!fields || !fields[0].includes(`\r\nAuthentication-Results: ${receiverHostname};`)) throw new Error(`no trace fields of ${receiverHostname} on top of:\n${text.slice(0, 500)}`);
  return raw.subarray(fields[0].length);
}
