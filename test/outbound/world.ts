// The outbound tests' world: inboxd in-process, a DNS server on loopback that publishes the
// service domain's records (as `inboxd dns` prints them) and the remote domains' MX, and a real
// SMTP server on loopback standing in for every remote MX (INBOXD_OUTBOUND_PORT is its port).
import type { OutboundQueue } from "../../src/outbound/queue";
import { serviceDomainRecords, zoneFileLines } from "../../src/outbound/service-domain";
import { register, startTestServer, type TestServer } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { startSmtpSink, type SmtpRejection, type SmtpSink, type SmtpSinkOptions } from "../peers/smtp-sink";

export interface OutboundWorld {
  dns: DnsServer;
  sink: SmtpSink;
  server: TestServer;
  queue: OutboundQueue;
  apiKey: string;
  inbox: { id: string; email: string };
  /** RCPT TO addresses the sink was asked for, in order, accepted or not. */
  rcptLog: string[];
  /** How the sink answers RCPT TO for an address; unset: accepted. */
  answers: Map<string, SmtpRejection | (() => SmtpRejection | undefined)>;
  /** How the sink answers every MAIL FROM, or every message's data, while set; unset: accepted. */
  refusals: { mailFrom?: SmtpRejection; data?: SmtpRejection };
  send(body: Record<string, unknown>): Promise<any>;
  message(id: string): Promise<any>;
  /** Event types recorded for a message, oldest first. */
  /** The message's events, in the order they were recorded. */
  events(messageId: string): Promise<string[]>;
  /** Points `domain`'s MX at hosts resolving to 127.0.0.1 (the sink) unless given other addresses. */
  mx(domain: string, hosts?: { name: string; priority: number; address: string }[]): void;
  close(): Promise<void>;
}

export interface WorldOptions {
  /** More settings; a function gets the sink, for settings that name its port. */
  env?: Record<string, string> | ((sink: SmtpSink) => Record<string, string>);
  sink?: SmtpSinkOptions;
}

export async function startOutboundWorld(options: WorldOptions = {}): Promise<OutboundWorld> {
  const dns = await startDnsServer();
  const rcptLog: string[] = [];
  const answers = new Map<string, SmtpRejection | (() => SmtpRejection | undefined)>();
  const refusals: OutboundWorld["refusals"] = {};
  const sink = await startSmtpSink({
    tls: true,
    mailFromResponse: () => refusals.mailFrom,
    dataResponse: () => refusals.data,
    ...options.sink,
    respond(rcpt) {
      rcptLog.push(rcpt);
      const answer = answers.get(rcpt);
      return typeof answer === "function" ? answer() : answer;
    },
  });
  const server = await startTestServer({
    env: {
      INBOXD_DNS_SERVERS: dns.address,
      INBOXD_OUTBOUND_PORT: String(sink.port),
      INBOXD_DELIVERY_RETRY_DELAYS: "60,120",
      INBOXD_SMTP_CLIENT_TIMEOUT_SCALE: "0.002",
      INBOXD_SEND_LIMIT: "10000",
      ...(typeof options.env === "function" ? options.env(sink) : options.env),
    },
  });
  dns.setZoneFile(zoneFileLines(server.app.config, await serviceDomainRecords(server.app.config, server.app.store)));
  const queue = server.running.parts.find((part) => part.name === "outbound") as OutboundQueue;
  const account = await register(server.api);
  const apiKey = account.apiKey.key;
  const inbox = { id: account.inbox.id, email: account.inbox.email };

  return {
    dns,
    sink,
    server,
    queue,
    apiKey,
    inbox,
    rcptLog,
    answers,
    refusals,
    async send(body) {
      const res = await server.api.request("POST", `/v1/inboxes/${inbox.id}/messages/send`, { token: apiKey, body: { subject: "Hello", text: "Hi there.", html: "<p>Hi there.</p>", ...body } });
      if (res.status !== 201) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async message(id) {
      const res = await server.api.get(`/v1/inboxes/${inbox.id}/messages/${id}`, apiKey);
      if (res.status !== 200) throw new Error(`get message: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async events(messageId) {
      // Through the store, so that the tests run on either engine.
      const { events } = await server.app.store.events.readAfter(account.organization.id, { afterId: null, limit: 10_000, maxChars: Infinity });
      return events.filter((event) => event.messageId === messageId).map((event) => event.type);
    },
    mx(domain, hosts = [{ name: `mx.${domain}`, priority: 10, address: "127.0.0.1" }]) {
      dns.set(domain, "MX", hosts.map(({ name, priority }) => ({ exchange: name, priority })));
      for (const host of hosts) dns.set(host.name, "A", [host.address]);
    },
    async close() {
      await server.cleanup();
      await sink.close();
      await dns.close();
    },
  };
}
