import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SMTPConnection from "nodemailer/lib/smtp-connection";
import { parseReturnPath, returnPathFor } from "../../src/outbound/return-path";
import { processReturnedReport } from "../../src/outbound/returned-report";
import { startOutboundWorld, type OutboundWorld } from "./world";
import { deliveryStatusReport, type ReportedRecipient } from "../peers/delivery-status";

let w: OutboundWorld;
beforeAll(async () => {
  w = await startOutboundWorld();
  w.mx("remote.test");
  w.mx("elsewhere.test");
});
afterAll(() => w.close());

interface Delivered {
  messageId: string;
  deliveryId: string;
  returnPath: string;
  /** The header section the remote server received. */
  headers: string;
}

/** A message delivered to `to`, as a later report would quote it. */
async function delivered(to: string[]): Promise<Delivered> {
  const sent = await w.send({ to });
  await w.queue.runDueNow();
  const received = w.sink.messages.filter((message) => message.rcptTo.includes(to[0]!)).at(-1)!;
  const deliveryId = parseReturnPath(w.server.app, received.mailFrom)!.deliveryId!;
  return { messageId: sent.id, deliveryId, returnPath: received.mailFrom, headers: received.raw.toString().split("\r\n\r\n")[0]! };
}

/** The outcome of a report sent to the return path of `deliveryId` alone. */
const processed = async (deliveryId: string, report: Buffer) => (await processReturnedReport(w.server.app, [deliveryId], report))[0];

/** What a remote MTA sends when mail it accepted cannot be delivered after all, about `original`. */
const dsn = (original: Delivered, recipients: ReportedRecipient[]): Buffer =>
  Buffer.from(deliveryStatusReport({ to: original.returnPath, recipients, originalHeaders: original.headers }));

/** RFC 5965: a spam complaint a mailbox provider forwards from its feedback loop. */
function arf(original: Delivered, feedbackType: string, recipient?: string): Buffer {
  return Buffer.from(
    [
      "From: feedback@fbl.remote.test",
      `To: ${original.returnPath}`,
      "Subject: FW: complaint",
      "MIME-Version: 1.0",
      'Content-Type: multipart/report; report-type=feedback-report; boundary="b2"',
      "",
      "--b2",
      "Content-Type: text/plain",
      "",
      "This is an email abuse report.",
      "--b2",
      "Content-Type: message/feedback-report",
      "",
      `Feedback-Type: ${feedbackType}`,
      "User-Agent: FBL/1.0",
      "Version: 1",
      ...(recipient ? [`Original-Rcpt-To: <${recipient}>`] : []),
      "",
      "--b2",
      "Content-Type: message/rfc822",
      "Content-Disposition: inline",
      "",
      original.headers,
      "",
      "Body.",
      "--b2--",
      "",
    ].join("\r\n"),
  );
}

const suppressed = async () => (await w.server.api.get("/v1/suppressions", w.apiKey)).body as any[];

describe("bounce reports (DSN)", () => {
  test("a failed DSN to the return path moves a delivered message to bounced, emits message.bounced once, suppresses the address", async () => {
    const original = await delivered(["una@remote.test"]);
    const report = dsn(original, [{ address: "una@remote.test", action: "failed", status: "5.1.1" }]);
    expect(await processed(original.deliveryId, report)).toBe("bounced");
    const message = await w.message(original.messageId);
    expect(message.status).toBe("bounced");
    expect(message.deliveries[0]).toMatchObject({ status: "bounced", lastResponse: expect.stringContaining("5.1.1") });
    expect((await suppressed()).find((s) => s.address === "una@remote.test")).toMatchObject({ reason: "bounced", messageId: original.messageId });

    expect(await processed(original.deliveryId, report)).toBe("bounced");
    expect(await w.events(original.messageId)).toEqual(["message.sent", "message.delivered", "message.bounced"]);
  });

  test("the report's Diagnostic-Code is kept as a reply is: its control characters replaced, cut at 1,000 characters", async () => {
    const original = await delivered(["esc@remote.test"]);
    const report = dsn(original, [{ address: "esc@remote.test", action: "failed", status: "5.1.1" }])
      .toString()
      .replace("mailbox unavailable", `mailbox \x1b[2J unavailable ${"z".repeat(2_000)}`);
    expect(await processed(original.deliveryId, Buffer.from(report))).toBe("bounced");
    const { lastResponse } = (await w.message(original.messageId)).deliveries[0];
    expect(lastResponse).toStartWith("bounce report: 5.1.1 550 5.1.1 mailbox \ufffd[2J unavailable zzz");
    expect(lastResponse).toMatch(/… \(\d+ more characters\)$/);
    expect((await suppressed()).find((s) => s.address === "esc@remote.test")!.detail).toBe(lastResponse);
  });

  test("a NUL decoded out of the report (quoted-printable) is left out of the reply recorded, on either engine", async () => {
    const original = await delivered(["nul@remote.test"]);
    const report = dsn(original, [{ address: "nul@remote.test", action: "failed", status: "5.1.1" }])
      .toString()
      .replace("Content-Type: message/delivery-status\r\n", "Content-Type: message/delivery-status\r\nContent-Transfer-Encoding: quoted-printable\r\n")
      .replace("mailbox unavailable", "mailbox=00unavailable");
    expect(await processed(original.deliveryId, Buffer.from(report))).toBe("bounced");
    expect((await w.message(original.messageId)).deliveries[0].lastResponse).toBe("bounce report: 5.1.1 550 5.1.1 mailboxunavailable");
  });

  test("a report to a return path names only recipients at its domain: another domain's recipient of the message is neither bounced nor suppressed", async () => {
    const original = await delivered(["ida@remote.test", "victim@elsewhere.test"]);
    const report = dsn(original, [{ address: "victim@elsewhere.test", action: "failed", status: "5.1.1" }, { address: "ida@remote.test", action: "failed", status: "5.1.1" }]);
    expect(await processed(original.deliveryId, report)).toBe("bounced");
    const message = await w.message(original.messageId);
    expect(message.deliveries.map((d: any) => [d.recipient, d.status])).toEqual([
      ["ida@remote.test", "bounced"],
      ["victim@elsewhere.test", "delivered"],
    ]);
    expect((await suppressed()).map((s) => s.address)).not.toContain("victim@elsewhere.test");
  });

  test("several recipients in one transaction: the DSN's Final-Recipient picks the delivery", async () => {
    const original = await delivered(["vic@remote.test", "wes@remote.test"]);
    const report = dsn(original, [{ address: "wes@remote.test", action: "failed", status: "5.2.1" }]);
    expect(await processed(original.deliveryId, report)).toBe("bounced");
    const message = await w.message(original.messageId);
    expect(message.deliveries.map((d: any) => [d.recipient, d.status])).toEqual([
      ["vic@remote.test", "delivered"],
      ["wes@remote.test", "bounced"],
    ]);
  });

  test("a hard bounce or a complaint naming a co-recipient of the transaction (whose copy showed the return path too) bounces that delivery but suppresses no one", async () => {
    const original = await delivered(["amy@remote.test", "bea@remote.test"]);
    expect(await processed(original.deliveryId, dsn(original, [{ address: "bea@remote.test", action: "failed", status: "5.1.1" }]))).toBe("bounced");
    expect((await w.message(original.messageId)).deliveries.map((d: any) => [d.recipient, d.status])).toEqual([
      ["amy@remote.test", "delivered"],
      ["bea@remote.test", "bounced"],
    ]);
    const complained = await delivered(["amy@remote.test", "cal@remote.test"]);
    expect(await processed(complained.deliveryId, arf(complained, "abuse", "cal@remote.test"))).toBe("complained");
    const addresses = (await suppressed()).map((s) => s.address);
    expect(addresses).not.toContain("bea@remote.test");
    expect(addresses).not.toContain("cal@remote.test");
    // The return path's own recipient is still suppressed by a hard bounce.
    expect(await processed(original.deliveryId, dsn(original, [{ address: "amy@remote.test", action: "failed", status: "5.1.1" }]))).toBe("bounced");
    expect((await suppressed()).map((s) => s.address)).toContain("amy@remote.test");
  });

  test("a bounce never touches a delivery refused before any try (the first failure stands)", async () => {
    // dee is suppressed by a bounce of a message to dee alone.
    const first = await delivered(["dee@remote.test"]);
    await processed(first.deliveryId, dsn(first, [{ address: "dee@remote.test", action: "failed", status: "5.1.1" }]));
    const original = await delivered(["eve@remote.test", "dee@remote.test"]);
    const refused = async () => (await w.message(original.messageId)).deliveries.find((d: any) => d.recipient === "dee@remote.test");
    const before = await refused();
    expect(before.status).toBe("rejected");
    await processed(original.deliveryId, dsn(original, [{ address: "dee@remote.test", action: "failed", status: "5.1.1" }]));
    expect(await refused()).toEqual(before);
  });

  test("delayed reports, reports about another message, unknown return paths and ordinary mail are ignored", async () => {
    const original = await delivered(["xia@remote.test"]);
    expect(await processed(original.deliveryId, dsn(original, [{ address: "xia@remote.test", action: "delayed", status: "4.4.7" }]))).toBe("ignored");
    const otherMessage = { ...original, headers: original.headers.replace(/^Message-ID: .*$/im, "Message-ID: <someone-else@elsewhere.test>") };
    expect(await processed(original.deliveryId, dsn(otherMessage, [{ address: "xia@remote.test", action: "failed", status: "5.1.1" }]))).toBe("ignored");
    expect(await processed("dlv_000000000000000000000000", dsn(original, [{ address: "xia@remote.test", action: "failed", status: "5.1.1" }]))).toBe("ignored");
    expect(await processed(original.deliveryId, Buffer.from("From: a@b.test\r\nSubject: hi\r\n\r\nJust mail.\r\n"))).toBe("ignored");
    expect((await w.message(original.messageId)).status).toBe("delivered");
    expect(await w.events(original.messageId)).toEqual(["message.sent", "message.delivered"]);
  });

  test("over SMTP from the null sender: accepted at the return path, acted on, not stored, and nothing is sent back", async () => {
    const original = await delivered(["yul@remote.test"]);
    const smtp = w.server.running.parts.find((part) => part.name === "smtp")!;
    const before = { sink: w.sink.messages.length, inboxMessages: (await w.server.api.get(`/v1/inboxes/${w.inbox.id}/messages`, w.apiKey)).body.length };
    const client = new SMTPConnection({ host: "127.0.0.1", port: smtp.address!.port, ignoreTLS: true, logger: false });
    await new Promise<void>((resolve, reject) => {
      client.once("error", reject);
      client.connect(() => resolve());
    });
    const report = dsn(original, [{ address: "yul@remote.test", action: "failed", status: "5.1.1" }]);
    // RFC 3464 §2: a DSN goes out with the null reverse-path <>.
    const info = await new Promise<{ accepted: string[] }>((resolve, reject) => client.send({ from: "", to: [original.returnPath] }, report, (error, result) => (error ? reject(error) : resolve(result))));
    client.quit();
    expect(info.accepted).toEqual([original.returnPath]);
    expect((await w.message(original.messageId)).status).toBe("bounced");
    await w.queue.runDueNow();
    expect(w.sink.messages.length).toBe(before.sink);
    expect((await w.server.api.get(`/v1/inboxes/${w.inbox.id}/messages`, w.apiKey)).body.length).toBe(before.inboxMessages);
  });
});

describe("a report sent along with mail for an inbox", () => {
  test("refused with that mail (its inbox's receive rules take no such sender): 550, and the report is not acted on", async () => {
    const original = await delivered(["vic@remote.test"]);
    const rule = await w.server.api.post("/v1/access-rules", { direction: "receive", action: "allow", value: "friend@remote.test", inboxId: w.inbox.id }, w.apiKey);
    expect(rule.status).toBe(201);
    const smtp = w.server.running.parts.find((part) => part.name === "smtp")!;
    const client = new SMTPConnection({ host: "127.0.0.1", port: smtp.address!.port, ignoreTLS: true, logger: false });
    await new Promise<void>((resolve, reject) => {
      client.once("error", reject);
      client.connect(() => resolve());
    });
    const report = dsn(original, [{ address: "vic@remote.test", action: "failed", status: "5.1.1" }]);
    const refused = await new Promise<{ response?: string }>((resolve) => client.send({ from: "", to: [original.returnPath, w.inbox.email] }, report, (error) => resolve(error as { response?: string })));
    client.quit();
    expect(refused?.response).toStartWith("550 5.7.1");
    expect((await w.message(original.messageId)).status).toBe("delivered");
    expect((await suppressed()).map((entry) => entry.address)).not.toContain("vic@remote.test");
    expect((await w.server.api.delete(`/v1/access-rules/${rule.body.id}`, w.apiKey)).status).toBe(200);
  });
});

describe("what a return path takes", () => {
  test("over SMTP, a return path that names no delivery of ours is refused at RCPT, before any data", async () => {
    const smtp = w.server.running.parts.find((part) => part.name === "smtp")!;
    const client = new SMTPConnection({ host: "127.0.0.1", port: smtp.address!.port, ignoreTLS: true, logger: false });
    await new Promise<void>((resolve, reject) => {
      client.once("error", reject);
      client.connect(() => resolve());
    });
    const unknown = returnPathFor(w.server.app, "dlv_000000000000000000000000");
    const refused = await new Promise<{ response?: string }>((resolve) => client.send({ from: "", to: [unknown] }, "Subject: x\r\n\r\nx\r\n", (error) => resolve(error as { response?: string })));
    client.quit();
    expect(refused?.response).toStartWith("550 5.1.1");
  });

  test("a report that returns the whole original message is read from its first MiB: 5 MB of original, still a bounce", async () => {
    const original = await delivered(["zoe@remote.test"]);
    const headerPart = `Content-Type: text/rfc822-headers\r\n\r\n${original.headers}\r\n`;
    const wholePart = `Content-Type: message/rfc822\r\n\r\n${original.headers}\r\n\r\n${`${"x".repeat(76)}\r\n`.repeat(64 * 1024)}`;
    const report = dsn(original, [{ address: "zoe@remote.test", action: "failed", status: "5.1.1" }]).toString().replace(headerPart, wholePart);
    expect(report.length).toBeGreaterThan(5_000_000);
    expect(await processed(original.deliveryId, Buffer.from(report))).toBe("bounced");
    expect((await w.message(original.messageId)).status).toBe("bounced");
  });
});

describe("complaint reports (ARF)", () => {
  test("an abuse report moves the message to complained once and suppresses the complaining address", async () => {
    const original = await delivered(["zed@remote.test"]);
    expect(await processed(original.deliveryId, arf(original, "abuse", "zed@remote.test"))).toBe("complained");
    expect((await w.message(original.messageId)).status).toBe("complained");
    expect((await suppressed()).find((s) => s.address === "zed@remote.test")).toMatchObject({ reason: "complained", detail: "feedback report: abuse" });
    // A redacted recipient: the return path still names who it was.
    expect(await processed(original.deliveryId, arf(original, "abuse"))).toBe("complained");
    expect(await w.events(original.messageId)).toEqual(["message.sent", "message.delivered", "message.complained"]);
  });

  test("not-spam and auth-failure reports are not complaints", async () => {
    const original = await delivered(["abe@remote.test"]);
    expect(await processed(original.deliveryId, arf(original, "not-spam"))).toBe("ignored");
    expect(await processed(original.deliveryId, arf(original, "auth-failure"))).toBe("ignored");
    expect((await w.message(original.messageId)).status).toBe("delivered");
  });

  test("return paths name a delivery on INBOXD_HOSTNAME, with its tag", () => {
    expect(returnPathFor(w.server.app, "dlv_abc123")).toMatch(/^bounces\+dlv_abc123-[0-9a-f]{20}@mx\.inboxd\.test$/);
  });
});
