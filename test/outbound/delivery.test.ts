import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { dkimVerify } from "mailauth";
import { SIGNED_FIELD_NAMES } from "../../src/dkim/sign";
import { createResolver } from "../../src/dns/resolver";
import { parseReturnPath } from "../../src/outbound/return-path";
import { eventually, onPostgres, queryRows } from "../harness";
import { dkimverify, dkimverifyMissing } from "../peers/dkimverify";
import { startOutboundWorld, type OutboundWorld } from "./world";

let w: OutboundWorld;
beforeAll(async () => {
  // Two connections at most per domain, so that reuse shows when more messages than that go out.
  w = await startOutboundWorld({ env: { INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN: "2" } });
  w.mx("remote.test");
  w.mx("other.test");
});
afterAll(() => w.close());

const headerSection = (raw: Buffer) => raw.toString().split("\r\n\r\n")[0]!;
const sinkMessagesTo = (address: string) => w.sink.messages.filter((message) => message.rcptTo.includes(address));
const rcptCount = (address: string) => w.rcptLog.filter((rcpt) => rcpt === address).length;
const minutes = (n: number) => n * 60_000;

/**
 * A remote MX on `address` (INBOXD_OUTBOUND_PORT) with just enough SMTP to reach the end of a
 * message's data, where `atEndOfData` answers, or holds the answer, or closes. `answers` may
 * answer a command its own way first (true when it did).
 */
async function startScriptedMx(address: string, atEndOfData: (socket: net.Socket) => void, answers: (command: string, socket: net.Socket) => boolean = () => false) {
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    let inData = false;
    let buffered = "";
    socket.write("220 scripted.test ESMTP\r\n");
    socket.on("data", (chunk) => {
      buffered += chunk.toString("latin1");
      if (inData) {
        if (!buffered.includes("\r\n.\r\n")) return;
        inData = false;
        buffered = "";
        return atEndOfData(socket);
      }
      for (let end = buffered.indexOf("\r\n"); end >= 0 && !inData; end = buffered.indexOf("\r\n")) {
        const command = buffered.slice(0, end).toUpperCase();
        buffered = buffered.slice(end + 2);
        if (answers(command, socket)) continue;
        if (command.startsWith("EHLO")) socket.write("250-scripted.test\r\n250 8BITMIME\r\n");
        else if (command === "DATA") {
          inData = true;
          socket.write("354 go ahead\r\n");
        } else if (command === "QUIT") socket.end("221 bye\r\n");
        else socket.write("250 OK\r\n");
      }
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(w.sink.port, address, resolve));
  return {
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** Send, let the queue run what is due, and read the message back. */
async function sendAndRun(body: Record<string, unknown>) {
  const sent = await w.send(body);
  await w.queue.runDueNow();
  return w.message(sent.id);
}

// First: signatures carry t= from the App's clock, which later tests move ahead of the verifiers' clocks.
describe("DKIM", () => {
  test("a reply is signed for the From domain with RSA and Ed25519 over the listed fields; mailauth and dkimverify agree", async () => {
    const original = await sendAndRun({ to: ["pia@remote.test"], cc: ["quinn@remote.test"], subject: "Plans" });
    const reply = await w.server.api.request("POST", `/v1/inboxes/${w.inbox.id}/messages/${original.id}/reply`, { token: w.apiKey, body: { text: "More.", html: "<p>More.</p>" } });
    expect(reply.status).toBe(201);
    await w.queue.runDueNow();
    const received = sinkMessagesTo("pia@remote.test").at(-1)!;
    const header = headerSection(received.raw).replace(/\r\n\s+/g, " ");
    expect(header).toMatch(/^In-Reply-To: /m);

    const signatures = header.split("\r\n").filter((line) => line.startsWith("DKIM-Signature:"));
    expect(signatures.map((s) => /a=([^;]+)/.exec(s)![1]).toSorted()).toEqual(["ed25519-sha256", "rsa-sha256"]);
    for (const signature of signatures) {
      expect(signature).toContain("c=relaxed/relaxed");
      expect(signature).toContain("d=inboxd.test;");
      const fields = /h=([^;]+)/.exec(signature)![1]!.replace(/\s/g, "").toLowerCase().split(":");
      // The fields the message has, before the oversigned tail that names every signable one once more.
      const present = fields.slice(0, fields.length - SIGNED_FIELD_NAMES.length);
      for (const field of ["from", "to", "cc", "subject", "date", "message-id", "mime-version", "content-type", "in-reply-to", "references"]) expect(present).toContain(field);
    }

    const verified = await dkimVerify(received.raw, { resolver: createResolver([w.dns.address]).forMailauth });
    expect(verified.results.map((r) => [r.signingDomain, r.status?.result]).toSorted()).toEqual([
      ["inboxd.test", "pass"],
      ["inboxd.test", "pass"],
    ]);
  });

  test.skipIf(dkimverifyMissing !== undefined)(`dkimverify (python3-dkim) passes both signatures${dkimverifyMissing ? ` — skipped: ${dkimverifyMissing}` : ""}`, async () => {
    const received = sinkMessagesTo("pia@remote.test").at(-1)!;
    expect(await dkimverify(received.raw, 0, w.dns.port)).toEqual({ exitCode: 0, output: "signature ok" });
    expect(await dkimverify(received.raw, 1, w.dns.port)).toEqual({ exitCode: 0, output: "signature ok" });
  });

  test("without an active key for the From domain the message is rejected, never sent unsigned", async () => {
    const keys = await w.server.app.store.dkimKeys.activeForDomain("inboxd.test");
    const now = w.server.clock.now();
    for (const key of keys) await w.server.app.store.dkimKeys.setStatus(key.id, "retired", now);
    try {
      const message = await sendAndRun({ to: ["ray@remote.test"] });
      expect(message.status).toBe("rejected");
      expect(message.deliveries[0].lastResponse).toContain("no active DKIM key for inboxd.test");
      expect(rcptCount("ray@remote.test")).toBe(0);
    } finally {
      for (const key of keys) await w.server.app.store.dkimKeys.setStatus(key.id, "active", now);
    }
  });
});

describe("direct MX delivery", () => {
  test("a remote recipient gets the message over STARTTLS with a VERP return path; delivered once, with its event once", async () => {
    const message = await sendAndRun({ to: ["alice@remote.test"] });
    expect(message.status).toBe("delivered");
    expect(message.deliveries).toEqual([{ recipient: "alice@remote.test", status: "delivered", attempts: 1, lastResponse: expect.stringMatching(/^250 /), updatedAt: expect.any(String) }]);
    expect(await w.events(message.id)).toEqual(["message.sent", "message.delivered"]);

    const [received] = sinkMessagesTo("alice@remote.test");
    expect(received!.secure).toBe(true);
    expect(received!.rcptTo).toEqual(["alice@remote.test"]);
    expect(received!.mailFrom).toMatch(/^bounces\+dlv_[0-9a-f]+-[0-9a-f]{20}@mx\.inboxd\.test$/);
    const deliveryId = parseReturnPath(w.server.app, received!.mailFrom)!.deliveryId!;
    expect((await w.server.app.store.deliveries.find(deliveryId))?.recipient).toBe("alice@remote.test");

    // Nothing delivered is tried again, however much later.
    w.server.clock.advance(minutes(60 * 24 * 7));
    await w.queue.runDueNow();
    expect(sinkMessagesTo("alice@remote.test")).toHaveLength(1);
    expect(await w.events(message.id)).toEqual(["message.sent", "message.delivered"]);
  });

  test("recipients at one domain share one transaction, each domain has its own, Bcc only in the envelope", async () => {
    const message = await sendAndRun({ to: ["ann@remote.test", "ben@remote.test"], cc: ["cid@other.test"], bcc: ["dee@remote.test"] });
    expect(message.status).toBe("delivered");
    expect(message.deliveries.map((d: any) => [d.recipient, d.status])).toEqual([
      ["ann@remote.test", "delivered"],
      ["ben@remote.test", "delivered"],
      ["cid@other.test", "delivered"],
      ["dee@remote.test", "delivered"],
    ]);
    const atRemote = sinkMessagesTo("ann@remote.test");
    expect(atRemote).toHaveLength(1);
    expect(atRemote[0]!.rcptTo.toSorted()).toEqual(["ann@remote.test", "ben@remote.test", "dee@remote.test"]);
    expect(sinkMessagesTo("cid@other.test")[0]!.rcptTo).toEqual(["cid@other.test"]);
    expect(headerSection(atRemote[0]!.raw)).not.toContain("dee@remote.test");
  });

  test("a 4xx answer is retried after the configured delay, then delivered", async () => {
    let refusals = 1;
    w.answers.set("bob@remote.test", () => (refusals-- > 0 ? { code: 451, message: "4.3.0 Try again later" } : undefined));
    const first = await sendAndRun({ to: ["bob@remote.test"] });
    expect(first.status).toBe("sent");
    expect(first.deliveries[0]).toMatchObject({ status: "queued", attempts: 1, lastResponse: expect.stringMatching(/^451 4\.3\.0/) });

    await w.queue.runDueNow(); // not due yet
    expect(rcptCount("bob@remote.test")).toBe(1);

    w.server.clock.advance(67_000); // 60 s and at most 10 % jitter
    await w.queue.runDueNow();
    const second = await w.message(first.id);
    expect(second.status).toBe("delivered");
    expect(second.deliveries[0]).toMatchObject({ status: "delivered", attempts: 2 });
    expect(await w.events(first.id)).toEqual(["message.sent", "message.delivered"]);
  });

  test("retries exhausted: bounced after the last delay, without suppressing the address", async () => {
    w.answers.set("dave@remote.test", { code: 452, message: "4.2.2 Mailbox full" });
    const sent = await sendAndRun({ to: ["dave@remote.test"] });
    w.server.clock.advance(67_000);
    await w.queue.runDueNow();
    expect((await w.message(sent.id)).deliveries[0]).toMatchObject({ status: "queued", attempts: 2 });
    w.server.clock.advance(133_000);
    await w.queue.runDueNow();
    const message = await w.message(sent.id);
    expect(message.status).toBe("bounced");
    expect(message.deliveries[0]).toMatchObject({ status: "bounced", attempts: 3, lastResponse: expect.stringContaining("retries exhausted after 3 tries") });
    expect(await w.events(sent.id)).toEqual(["message.sent", "message.bounced"]);
    expect(await w.server.app.store.suppressions.find((await w.server.app.store.deliveries.message(sent.id))!.organizationId, "dave@remote.test")).toBeUndefined();
  });

  test("a 5xx to a policy refusal (5.7.x) bounces the message but keeps the address sendable", async () => {
    w.answers.set("fay@remote.test", { code: 550, message: "5.7.1 Message refused by policy" });
    const message = await sendAndRun({ to: ["fay@remote.test"] });
    expect(message.status).toBe("bounced");
    const list = await w.server.api.get("/v1/suppressions", w.apiKey);
    expect(list.body.map((s: any) => s.address)).not.toContain("fay@remote.test");
  });
});

describe("suppression", () => {
  test("a hard bounce suppresses the address; a later send is rejected without a try; DELETE lifts it", async () => {
    w.answers.set("carol@remote.test", { code: 550, message: "5.1.1 No such user" });
    const bounced = await sendAndRun({ to: ["carol@remote.test"] });
    expect(bounced.status).toBe("bounced");
    expect(bounced.deliveries[0]).toMatchObject({ status: "bounced", attempts: 1, lastResponse: "550 5.1.1 No such user" });
    expect(await w.events(bounced.id)).toEqual(["message.sent", "message.bounced"]);

    const list = await w.server.api.get("/v1/suppressions", w.apiKey);
    expect(list.status).toBe(200);
    const entry = list.body.find((s: any) => s.address === "carol@remote.test");
    const entryId: string = entry.id;
    expect(entryId).toMatch(/^sup_/);
    expect(entry).toMatchObject({ _id: entryId, reason: "bounced", detail: "550 5.1.1 No such user", messageId: bounced.id });

    const tries = rcptCount("carol@remote.test");
    // Rejected at once: the send's own response says so, before the queue runs.
    const answered = await w.send({ to: ["carol@remote.test", "dina@remote.test"] });
    expect(answered.status).toBe("rejected");
    expect(answered.deliveries.map((d: any) => [d.recipient, d.status])).toEqual([["carol@remote.test", "rejected"], ["dina@remote.test", "queued"]]);
    expect(answered.deliveries[0]).toMatchObject({ attempts: 0, lastResponse: expect.stringContaining("carol@remote.test is suppressed") });
    await w.queue.runDueNow();
    const rejected = await w.message(answered.id);
    expect(rejected.status).toBe("rejected");
    expect(rejected.deliveries.map((d: any) => [d.recipient, d.status, d.attempts])).toEqual([["carol@remote.test", "rejected", 0], ["dina@remote.test", "delivered", 1]]);
    expect(await w.events(rejected.id)).toEqual(["message.sent", "message.rejected"]);
    expect(rcptCount("carol@remote.test")).toBe(tries);

    const byAddress = await w.server.api.get("/v1/suppressions/CAROL@remote.test", w.apiKey);
    expect(byAddress.body.id).toBe(entryId);
    const deleted = await w.server.api.delete(`/v1/suppressions/${encodeURIComponent("carol@remote.test")}`, w.apiKey);
    expect(deleted.status).toBe(200);
    expect(deleted.body.address).toBe("carol@remote.test");
    expect((await w.server.api.delete(`/v1/suppressions/${entryId}`, w.apiKey)).body).toEqual({ error: "Suppression not found" });
    expect((await w.server.api.get("/v1/suppressions", w.apiKey)).body.map((s: any) => s.address)).not.toContain("carol@remote.test");

    w.answers.delete("carol@remote.test");
    expect((await sendAndRun({ to: ["carol@remote.test"] })).status).toBe("delivered");
  });

  test("a refused sender (MAIL FROM 5.1.8) or a refused message (554 at the data, no enhanced code) bounces it and suppresses no recipient", async () => {
    const suppressed = async () => (await w.server.api.get("/v1/suppressions", w.apiKey)).body.map((s: any) => s.address);
    w.refusals.mailFrom = { code: 550, message: "5.1.8 Sender address rejected: Domain not found" };
    const refusedSender = await sendAndRun({ to: ["gus@remote.test", "hal@remote.test"] });
    delete w.refusals.mailFrom;
    expect(refusedSender.status).toBe("bounced");
    expect(refusedSender.deliveries.map((d: any) => [d.status, d.lastResponse])).toEqual([
      ["bounced", "550 5.1.8 Sender address rejected: Domain not found"],
      ["bounced", "550 5.1.8 Sender address rejected: Domain not found"],
    ]);

    w.refusals.data = { code: 554, message: "Message rejected as spam" };
    const refusedMessage = await sendAndRun({ to: ["ida@remote.test"] });
    delete w.refusals.data;
    expect(refusedMessage.status).toBe("bounced");
    expect(refusedMessage.deliveries[0]).toMatchObject({ status: "bounced", lastResponse: "554 Message rejected as spam" });
    expect(await suppressed()).not.toEqual(expect.arrayContaining([expect.stringMatching(/^(gus|hal|ida)@/)]));
    // The same refusals reach them no more: the next message to each is delivered.
    expect((await sendAndRun({ to: ["gus@remote.test", "hal@remote.test", "ida@remote.test"] })).status).toBe("delivered");
  });

  test("suppressions belong to one organization: another's key sees none, and 401 without a key", async () => {
    const other = (await w.server.api.post("/auth/register", { firstName: "O", lastName: "T", username: "other-org@example.com", password: "correct horse battery staple" })).body;
    expect((await w.server.api.get("/v1/suppressions", other.apiKey.key)).body).toEqual([]);
    expect((await w.server.api.get("/v1/suppressions")).status).toBe(401);
    expect((await w.server.api.request("GET", "/v1/suppressions?per=101", { token: w.apiKey })).status).toBe(422);
  });
});

describe("routing (RFC 5321 §5.1)", () => {
  test("a domain without MX gets its mail at its A record", async () => {
    w.dns.set("a-only.test", "A", ["127.0.0.1"]);
    const message = await sendAndRun({ to: ["gus@a-only.test"] });
    expect(message.status).toBe("delivered");
    expect(sinkMessagesTo("gus@a-only.test")).toHaveLength(1);
  });

  test("a null MX (RFC 7505) is rejected without a connection", async () => {
    w.dns.set("nullmx.test", "MX", [{ exchange: ".", priority: 0 }]);
    const message = await sendAndRun({ to: ["hal@nullmx.test"] });
    expect(message.status).toBe("rejected");
    expect(message.deliveries[0]).toMatchObject({ status: "rejected", attempts: 0, lastResponse: expect.stringContaining("null MX") });
    expect(await w.events(message.id)).toEqual(["message.sent", "message.rejected"]);
    expect(rcptCount("hal@nullmx.test")).toBe(0);
  });

  test("a domain that does not exist is rejected; a DNS failure is retried", async () => {
    const missing = await sendAndRun({ to: ["ivy@nowhere.test"] });
    expect(missing.status).toBe("rejected");
    expect(missing.deliveries[0]).toMatchObject({ attempts: 0, lastResponse: expect.stringContaining("nowhere.test does not exist") });

    w.mx("flaky.test");
    w.dns.failNext("flaky.test", "SERVFAIL", 2); // both rounds of the resolver's first look-up
    const flaky = await sendAndRun({ to: ["jay@flaky.test"] });
    expect(flaky.deliveries[0]).toMatchObject({ status: "queued", lastResponse: expect.stringContaining("ESERVFAIL") });
    w.server.clock.advance(67_000);
    await w.queue.runDueNow();
    expect((await w.message(flaky.id)).status).toBe("delivered");

    // Tried once (the look-up failed), then found not to exist: one try made.
    w.dns.failNext("vanished.test", "SERVFAIL", 2);
    const vanished = await sendAndRun({ to: ["kay@vanished.test"] });
    expect(vanished.deliveries[0]).toMatchObject({ status: "queued", attempts: 1 });
    w.server.clock.advance(67_000);
    await w.queue.runDueNow();
    expect((await w.message(vanished.id)).deliveries[0]).toMatchObject({ status: "rejected", attempts: 1, lastResponse: expect.stringContaining("vanished.test does not exist") });
  });

  test("the preferred MX refusing connections, the next one takes the message", async () => {
    w.mx("multi.test", [
      { name: "mx2.multi.test", priority: 20, address: "127.0.0.1" },
      { name: "mx1.multi.test", priority: 10, address: "127.0.0.2" },
    ]);
    const message = await sendAndRun({ to: ["kim@multi.test"] });
    expect(message.status).toBe("delivered");
    expect(sinkMessagesTo("kim@multi.test")).toHaveLength(1);
  });

  test("an MX that refuses the message at the end of its data, then closes or never answers the RSET: the refusal is recorded, and the next message to it is sent", async () => {
    let closeAfterRefusal = true;
    let refusals = 0;
    const refusing = await startScriptedMx("127.0.0.5", (socket) => {
      refusals++;
      socket.write("554 5.6.0 content rejected\r\n");
      if (closeAfterRefusal) socket.end();
      else socket.removeAllListeners("data");
    });
    try {
      w.mx("refuses-data.test", [{ name: "mx.refuses-data.test", priority: 10, address: "127.0.0.5" }]);
      for (const [index, closes] of [true, false].entries()) {
        closeAfterRefusal = closes;
        const message = await sendAndRun({ to: [`kim${index}@refuses-data.test`] });
        expect({ closes, delivery: message.deliveries[0] }).toMatchObject({ closes, delivery: { status: "bounced", lastResponse: "554 5.6.0 content rejected" } });
      }
      // The lane is free: the next message to that host is tried too.
      expect((await sendAndRun({ to: ["kim2@refuses-data.test"] })).deliveries[0]).toMatchObject({ status: "bounced" });
      expect(refusals).toBe(3);
    } finally {
      refusing.close();
    }
  });

  test("an MX host that never sends its greeting times out (§4.5.3.2, scaled) and the next one takes the message", async () => {
    const silent: net.Socket[] = [];
    const mute = net.createServer((socket) => silent.push(socket));
    await new Promise<void>((resolve) => mute.listen(w.sink.port, "127.0.0.3", resolve));
    try {
      w.mx("slow.test", [
        { name: "mx1.slow.test", priority: 10, address: "127.0.0.3" },
        { name: "mx2.slow.test", priority: 20, address: "127.0.0.1" },
      ]);
      const started = Date.now();
      const message = await sendAndRun({ to: ["lee@slow.test"] });
      expect(message.status).toBe("delivered");
      expect(silent.length).toBe(1);
      expect(Date.now() - started).toBeGreaterThanOrEqual(500); // 5 minutes × 0.002
    } finally {
      for (const socket of silent) socket.destroy();
      mute.close();
    }
  });

  test("an MX that greets with 554 (RFC 5321 §3.1) is passed over for the next; when it is the only one, the try is deferred with its reply", async () => {
    const refusing = net.createServer((socket) => socket.end("554 5.7.1 no service here\r\n"));
    await new Promise<void>((resolve) => refusing.listen(w.sink.port, "127.0.0.4", resolve));
    try {
      w.mx("refusing.test", [
        { name: "mx1.refusing.test", priority: 10, address: "127.0.0.4" },
        { name: "mx2.refusing.test", priority: 20, address: "127.0.0.1" },
      ]);
      expect((await sendAndRun({ to: ["max@refusing.test"] })).status).toBe("delivered");
      w.mx("closed.test", [{ name: "mx.closed.test", priority: 10, address: "127.0.0.4" }]);
      const deferred = (await sendAndRun({ to: ["ned@closed.test"] })).deliveries[0];
      expect(deferred).toMatchObject({ status: "queued", attempts: 1 });
      // The server's reply, once: nodemailer's message carries it already.
      expect(deferred.lastResponse.split("554 5.7.1 no service here").length - 1).toBe(1);
    } finally {
      refusing.close();
    }
  });

  test("an MX that trickles its EHLO reply a byte at a time is cut off at the set-up's deadline on the clock (nodemailer's timer restarts with each byte); the next MX takes the message", async () => {
    const trickles: Timer[] = [];
    const trickling = await startScriptedMx(
      "127.0.0.5",
      (socket) => socket.write("250 OK\r\n"),
      (command, socket) => {
        if (!command.startsWith("EHLO")) return false;
        trickles.push(setInterval(() => socket.write("-"), 20));
        return true;
      },
    );
    try {
      w.mx("trickling.test", [
        { name: "mx1.trickling.test", priority: 10, address: "127.0.0.5" },
        { name: "mx2.trickling.test", priority: 20, address: "127.0.0.1" },
      ]);
      expect((await sendAndRun({ to: ["tia@trickling.test"] })).status).toBe("delivered");
      expect(trickles.length).toBe(1);
    } finally {
      for (const trickle of trickles) clearInterval(trickle);
      trickling.close();
    }
  });

  test("a STARTTLS handshake that fails (the server sends no TLS after its 220) is tried again in plaintext, as opportunistic TLS allows (RFC 7435)", async () => {
    let startTls = 0;
    const broken = await startScriptedMx(
      "127.0.0.6",
      (socket) => socket.write("250 2.0.0 taken in plaintext\r\n"),
      (command, socket) => {
        if (command.startsWith("EHLO")) socket.write("250-scripted.test\r\n250 STARTTLS\r\n");
        else if (command === "STARTTLS") {
          startTls++;
          socket.end("220 2.0.0 go ahead\r\nthis is no TLS\r\n");
        } else return false;
        return true;
      },
    );
    try {
      w.mx("badtls.test", [{ name: "mx.badtls.test", priority: 10, address: "127.0.0.6" }]);
      const message = await sendAndRun({ to: ["ian@badtls.test"] });
      expect(message.deliveries[0]).toMatchObject({ status: "delivered", lastResponse: "250 2.0.0 taken in plaintext" });
      expect(startTls).toBe(1);
    } finally {
      broken.close();
    }
  });

  test("a reply's control characters (a NUL, an escape sequence) are replaced and an acceptance is kept on one line cut at 1,000 characters, so that the outcome is recorded on either engine", async () => {
    const noisy = await startScriptedMx(
      "127.0.0.6",
      (socket) => socket.write(`250-2.0.0 queued\0 as \x1b[31mred\r\n250 ${"y".repeat(5_000)}\r\n`),
      (command, socket) => {
        if (!command.startsWith("RCPT TO:<NUL@")) return false;
        socket.write("550 5.1.1 no\0such\x07user\r\n");
        return true;
      },
    );
    try {
      w.mx("noisy.test", [{ name: "mx.noisy.test", priority: 10, address: "127.0.0.6" }]);
      const message = await sendAndRun({ to: ["nul@noisy.test", "ok@noisy.test"] });
      expect(message.deliveries.map((delivery: { status: string }) => delivery.status).sort()).toEqual(["bounced", "delivered"]);
      const [accepted, refused] = ["ok@noisy.test", "nul@noisy.test"].map((recipient) => message.deliveries.find((delivery: { recipient: string }) => delivery.recipient === recipient).lastResponse as string);
      expect(refused).toBe("550 5.1.1 no\ufffdsuch\ufffduser");
      expect(accepted).toStartWith("250-2.0.0 queued\ufffd as \ufffd[31mred 250 yyy");
      expect(accepted).toEndWith("… (4034 more characters)");
    } finally {
      noisy.close();
    }
  });

  test("a server's reply is kept cut at 1,000 characters, and at most five hosts' failures: a reply runs to 1 MiB, a domain to many MX hosts", async () => {
    const huge = `${"554-".concat("x".repeat(500), "\r\n").repeat(400)}554 5.7.1 no\r\n`;
    const refusing = net.createServer((socket) => socket.end(huge));
    await new Promise<void>((resolve) => refusing.listen(w.sink.port, "127.0.0.7", resolve));
    try {
      w.mx("verbose.test", Array.from({ length: 8 }, (_, i) => ({ name: `mx${i}.verbose.test`, priority: 10 + i, address: "127.0.0.7" })));
      const deferred = (await sendAndRun({ to: ["vic@verbose.test"] })).deliveries[0];
      expect(deferred).toMatchObject({ status: "queued", attempts: 1 });
      expect(deferred.lastResponse.length).toBeLessThan(6 * 1_200);
      expect(deferred.lastResponse).toContain("more characters)");
      expect(deferred.lastResponse).toEndWith("; and 3 more");
    } finally {
      refusing.close();
    }
  });

  /**
   * Six messages from a new inbox to `domain` (MX at `address`): a lane sends the first, whose
   * reply at the end of the data is held (continuation lines meanwhile, RFC 5321 §4.2.1, so that
   * no reply timeout ends it) while `meanwhile` runs; the rest wait in the lanes' backlogs.
   * The queue runs while the messages are sent, so a second lane (the per-domain limit) may
   * open with the later ones and be past its check when `meanwhile` runs: up to one message a
   * lane goes out, never the backlogs. Returns how many messages the MX got to the end of.
   */
  /** Messages to one domain in flight at once: one a lane. */
  const inFlightAtMost = () => w.server.app.config.deliveryConcurrencyPerDomain;

  async function withBacklogHeld(domain: string, address: string, meanwhile: (inboxId: string) => Promise<void>): Promise<number> {
    const held: { socket: net.Socket; waiting: ReturnType<typeof setInterval> }[] = [];
    let answered = 0;
    const slow = await startScriptedMx(address, (socket) => held.push({ socket, waiting: setInterval(() => socket.write("250-still working\r\n"), 100) }));
    const release = () => {
      for (const { socket, waiting } of held.splice(0)) {
        clearInterval(waiting);
        answered++;
        socket.write("250 OK queued\r\n");
      }
    };
    const releasing = setInterval(() => held.length > 0 && answered > 0 && release(), 10);
    try {
      w.mx(domain, [{ name: `mx.${domain}`, priority: 10, address }]);
      const inbox = (await w.server.api.post("/v1/inboxes", {}, w.apiKey)).body;
      for (let n = 0; n < 6; n++) {
        const sent = await w.server.api.post(`/v1/inboxes/${inbox.id}/messages/send`, { to: [`pat${n}@${domain}`], subject: `Held ${n}`, text: "Hi.", html: "" }, w.apiKey);
        expect({ status: sent.status, body: sent.body }).toMatchObject({ status: 201 });
      }
      const run = w.queue.runDueNow();
      await eventually("a message at the end of its data", () => held.length, (count) => count >= 1);
      await meanwhile(inbox.id);
      release();
      await run;
      return answered;
    } finally {
      clearInterval(releasing);
      for (const { waiting } of held) clearInterval(waiting);
      slow.close();
    }
  }

  test("deleting the sending inbox withdraws its messages a lane had claimed but not started: only the one being transmitted still goes", async () => {
    const answered = await withBacklogHeld("held.test", "127.0.0.6", async (inboxId) => {
      expect((await w.server.api.request("DELETE", `/v1/inboxes/${inboxId}`, { token: w.apiKey })).status).toBe(200);
    });
    expect(answered).toBeWithin(1, inFlightAtMost() + 1);
  });

  test.skipIf(!onPostgres)("messages another node took over (this node paused, or cut off from the database, past its lease) are not sent by this one too", async () => {
    const answered = await withBacklogHeld("taken-over.test", "127.0.0.7", async () => {
      await queryRows(w.server.app, "UPDATE deliveries SET claimed_by = 'another-node:/var/lib/inboxd#1' WHERE domain = 'taken-over.test'");
    });
    expect(answered).toBeWithin(1, inFlightAtMost() + 1);
  });

  test("connections are reused: ten messages to one domain travel over at most two (the per-domain limit)", async () => {
    w.mx("reuse.test");
    const before = w.sink.connections;
    const sent = await Promise.all(Array.from({ length: 10 }, (_, i) => w.send({ to: [`r${i}@reuse.test`] })));
    await w.queue.runDueNow();
    for (const message of sent) expect((await w.message(message.id)).status).toBe("delivered");
    expect(w.sink.connections - before).toBeLessThanOrEqual(2);
  });
});

describe("never", () => {
  test("an envelope recipient beyond the deliveries: a recipient with a line break never reaches RCPT TO", async () => {
    const sent = await w.send({ to: ["max@remote.test"] });
    const now = w.server.clock.now();
    // A stored recipient that would smuggle a second RCPT TO, were it written as is.
    await w.server.app.store.messages.insertDeliveries([
      { id: "dlv_00000000000000000000beef", organizationId: sent.organizationId, messageId: sent.id, recipient: "ned@remote.test>\r\nRCPT TO:<eve@remote.test", domain: "remote.test", status: "queued", attempts: 0, lastResponse: null, nextAttemptAt: now, createdAt: now, updatedAt: now },
    ]);
    await w.queue.runDueNow();
    const message = await w.message(sent.id);
    expect(sinkMessagesTo("max@remote.test")[0]!.rcptTo).toEqual(["max@remote.test"]);
    expect(w.rcptLog.filter((rcpt) => rcpt.includes("eve") || rcpt.includes("ned"))).toEqual([]);
    expect(message.deliveries[1]).toMatchObject({ status: "rejected", lastResponse: expect.stringContaining("not a deliverable address") });
    expect(message.status).toBe("rejected");
  });

  test("a header field added through CR/LF in the subject", async () => {
    const res = await w.server.api.request("POST", `/v1/inboxes/${w.inbox.id}/messages/send`, {
      token: w.apiKey,
      body: { to: ["oz@remote.test"], subject: "Hello\r\nBcc: eve@remote.test", text: "x", html: "<p>x</p>" },
    });
    expect(res.status).toBe(422);
    await w.queue.runDueNow();
    expect(w.rcptLog).not.toContain("eve@remote.test");
  });
});
