import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import nodemailer from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport";
import { startSmtpSink, type SmtpSink, type SmtpSinkOptions } from "./smtp-sink";
import { selfSignedCert } from "./tls";
import { startWebhookReceiver } from "./webhook-receiver";

const message = (to: string[]) => ({
  from: "sender@inboxd.test",
  to,
  subject: "Peer test",
  text: "Hello from the peers test.",
});

async function withSink(options: SmtpSinkOptions, run: (sink: SmtpSink) => Promise<void>): Promise<void> {
  const sink = await startSmtpSink(options);
  try {
    await run(sink);
  } finally {
    await sink.close();
  }
}

async function send(sink: SmtpSink, to: string[], extra: SMTPTransport.Options = {}) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: sink.port, secure: false, ...extra });
  try {
    return await transport.sendMail(message(to));
  } finally {
    transport.close();
  }
}

// Trust the sink's own certificate, so that the handshake is verified for real.
const verifiedStartTls = (sink: SmtpSink): SMTPTransport.Options => ({
  requireTLS: true,
  tls: { ca: sink.certificate, servername: "localhost" },
});

describe("smtp sink", () => {
  test("receives a plain message", () =>
    withSink({}, async (sink) => {
      const info = await send(sink, ["rcpt@example.net"]);
      expect(info.accepted).toEqual(["rcpt@example.net"]);
      const [received] = await sink.waitFor(1);
      expect(received.mailFrom).toBe("sender@inboxd.test");
      expect(received.rcptTo).toEqual(["rcpt@example.net"]);
      expect(received.secure).toBe(false);
      expect(received.authUser).toBeUndefined();
      expect(received.raw.toString()).toContain("Subject: Peer test");
      expect(received.raw.toString()).toContain("Hello from the peers test.");
      expect(sink.connections).toBe(1);
      expect(sink.certificate).toBeUndefined();
    }));

  test("offers no STARTTLS unless asked to", () =>
    withSink({}, async (sink) => {
      await expect(send(sink, ["rcpt@example.net"], { requireTLS: true })).rejects.toThrow();
      expect(sink.messages).toHaveLength(0);
    }));

  test("receives over STARTTLS with its self-signed certificate", () =>
    withSink({ tls: true }, async (sink) => {
      await send(sink, ["rcpt@example.net"], verifiedStartTls(sink));
      const [received] = await sink.waitFor(1);
      expect(received.secure).toBe(true);
    }));

  test("a client that verifies refuses it when it trusts another certificate", () =>
    withSink({ tls: true }, async (sink) => {
      const stranger = selfSignedCert("localhost").cert;
      await expect(send(sink, ["rcpt@example.net"], { requireTLS: true, tls: { ca: stranger, servername: "localhost" } })).rejects.toThrow();
      expect(sink.messages).toHaveLength(0);
    }));

  test("accepts opportunistic STARTTLS from a client that does not verify", () =>
    withSink({ tls: true }, async (sink) => {
      await send(sink, ["rcpt@example.net"], { tls: { rejectUnauthorized: false } });
      expect((await sink.waitFor(1))[0].secure).toBe(true);
    }));

  test("requires AUTH when given credentials, without TLS", () =>
    withSink({ auth: { user: "relay", pass: "secret-pass" } }, async (sink) => {
      await send(sink, ["rcpt@example.net"], { auth: { user: "relay", pass: "secret-pass" } });
      expect((await sink.waitFor(1))[0]).toMatchObject({ authUser: "relay", secure: false });
      await expect(send(sink, ["rcpt@example.net"])).rejects.toMatchObject({ responseCode: 530 });
      await expect(send(sink, ["rcpt@example.net"], { auth: { user: "relay", pass: "wrong" } })).rejects.toMatchObject({
        responseCode: 535,
      });
      expect(sink.messages).toHaveLength(1);
    }));

  test("takes AUTH after STARTTLS", () =>
    withSink({ tls: true, auth: { user: "relay", pass: "secret-pass" } }, async (sink) => {
      await send(sink, ["rcpt@example.net"], { ...verifiedStartTls(sink), auth: { user: "relay", pass: "secret-pass" } });
      expect((await sink.waitFor(1))[0]).toMatchObject({ authUser: "relay", secure: true });
    }));

  test("answers each recipient as told: 450 and 550 beside an accepted one", () => {
    const respond = (rcpt: string) => {
      if (rcpt === "full@example.net") return { code: 450, message: "4.2.2 Mailbox full" };
      if (rcpt === "nobody@example.net") return { code: 550, message: "5.1.1 No such user" };
      return undefined;
    };
    return withSink({ respond }, async (sink) => {
      const info = await send(sink, ["ok@example.net", "full@example.net", "nobody@example.net"]);
      expect(info.accepted).toEqual(["ok@example.net"]);
      expect(info.rejected).toEqual(["full@example.net", "nobody@example.net"]);
      const codes = (info.rejectedErrors ?? []).map((error) => (error as Error & { responseCode?: number }).responseCode);
      expect(codes).toEqual([450, 550]);
      expect((await sink.waitFor(1))[0].rcptTo).toEqual(["ok@example.net"]);
    });
  });

  test("a message whose every recipient is refused is not sent", () =>
    withSink({ respond: () => ({ code: 550, message: "5.1.1 No such user" }) }, async (sink) => {
      await expect(send(sink, ["a@example.net", "b@example.net"])).rejects.toMatchObject({ code: "EENVELOPE" });
      expect(sink.messages).toHaveLength(0);
    }));

  test("answers the DATA as told, and keeps only accepted messages", () => {
    const dataResponse = (received: { rcptTo: string[] }) =>
      received.rcptTo.includes("spam@example.net") ? { code: 554, message: "5.7.1 Message refused" } : undefined;
    return withSink({ dataResponse }, async (sink) => {
      await expect(send(sink, ["spam@example.net"])).rejects.toMatchObject({ responseCode: 554 });
      await send(sink, ["fine@example.net"]);
      expect((await sink.waitFor(1)).map((received) => received.rcptTo)).toEqual([["fine@example.net"]]);
      expect(sink.connections).toBe(2);
    });
  });

  test("waitFor fails after its timeout", () =>
    withSink({}, async (sink) => {
      await expect(sink.waitFor(1, 50)).rejects.toThrow("0 of 1 messages");
    }));
});

describe("webhook receiver", () => {
  test("records requests and answers per path", async () => {
    const receiver = startWebhookReceiver();
    try {
      receiver.respond("/fail", { status: 503, body: "down" });
      receiver.respond("/moved", { redirect: "https://example.com/" });
      receiver.respond("/slow", { delayMs: 200 });

      const ok = await fetch(receiver.url("/ok?a=1"), { method: "POST", body: '{"a":1}', headers: { "webhook-id": "evt_1" } });
      expect(ok.status).toBe(200);
      const fail = await fetch(receiver.url("/fail"), { method: "POST", body: "x" });
      expect([fail.status, await fail.text()]).toEqual([503, "down"]);
      const moved = await fetch(receiver.url("/moved"), { method: "POST", redirect: "manual" });
      expect([moved.status, moved.headers.get("location")]).toEqual([302, "https://example.com/"]);
      const started = Date.now();
      await fetch(receiver.url("/slow"), { method: "POST" });
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);

      const requests = await receiver.waitFor(4);
      expect(requests[0]).toMatchObject({ method: "POST", path: "/ok?a=1", body: '{"a":1}' });
      expect(requests[0].headers["webhook-id"]).toBe("evt_1");
      expect(requests.map((request) => request.path)).toEqual(["/ok?a=1", "/fail", "/moved", "/slow"]);
      expect(requests[3].receivedAt).toBeGreaterThanOrEqual(started);
      await expect(receiver.waitFor(5, 50)).rejects.toThrow("4 of 5 requests");
    } finally {
      await receiver.close();
    }
  });

  test("serves https with a given certificate", async () => {
    const pem = selfSignedCert("127.0.0.1");
    const receiver = startWebhookReceiver({ tls: pem });
    try {
      const response = await fetch(receiver.url("/hook"), { method: "POST", body: "{}", tls: { ca: pem.cert } });
      expect(response.status).toBe(200);
      expect(receiver.url("/hook")).toStartWith("https://127.0.0.1:");
    } finally {
      await receiver.close();
    }
  });
});

describe("selfSignedCert", () => {
  test("makes a certificate for a name, valid now, signed by its own key", () => {
    const now = new Date();
    const pem = selfSignedCert("mx.example.test", now);
    const certificate = new X509Certificate(pem.cert);
    expect(certificate.subject).toBe("CN=mx.example.test");
    expect(certificate.subjectAltName).toBe("DNS:mx.example.test");
    expect(certificate.checkHost("mx.example.test")).toBe("mx.example.test");
    expect(certificate.checkHost("other.example.test")).toBeUndefined();
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(new Date(certificate.validFrom).getTime()).toBeLessThan(now.getTime());
    expect(new Date(certificate.validTo).getTime()).toBeGreaterThan(now.getTime() + 3000 * 86_400_000);
    expect(pem.key).toContain("BEGIN PRIVATE KEY");
  });

  test("uses an iPAddress name for an IP literal", () => {
    const certificate = new X509Certificate(selfSignedCert("127.0.0.1").cert);
    expect(certificate.subjectAltName).toBe("IP Address:127.0.0.1");
    expect(certificate.checkIP("127.0.0.1")).toBe("127.0.0.1");
  });

  test("switches to GeneralizedTime for dates from 2050 on (RFC 5280 4.1.2.5)", () => {
    const certificate = new X509Certificate(selfSignedCert("late.test", new Date("2049-06-01T00:00:00Z"), 365).cert);
    expect(new Date(certificate.validTo).getUTCFullYear()).toBe(2050);
  });
});
