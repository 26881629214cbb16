// A real SMTP server on 127.0.0.1 standing in for a remote MX: records what it
// accepts and answers per recipient or per message as a test tells it to.
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import type { AddressInfo } from "node:net";
import { selfSignedCert, type PemCertificate } from "./tls";

export type SinkMessage = { mailFrom: string; rcptTo: string[]; raw: Buffer; secure: boolean; authUser?: string };

// A 4xx or 5xx reply.
export type SmtpRejection = { code: number; message: string };

export type SmtpSinkOptions = {
  tls?: boolean; // offer STARTTLS with a self-signed certificate for "localhost"
  certificate?: PemCertificate; // the STARTTLS certificate instead (with tls)
  auth?: { user: string; pass: string }; // require AUTH PLAIN/LOGIN with these credentials
  mailFromResponse?: (address: string) => SmtpRejection | undefined; // answer MAIL FROM; undefined accepts
  respond?: (rcpt: string) => SmtpRejection | undefined; // answer RCPT TO; undefined accepts
  dataResponse?: (message: SinkMessage) => SmtpRejection | undefined; // answer the DATA; undefined accepts
};

export type SmtpSink = {
  port: number;
  messages: SinkMessage[]; // accepted messages only, in arrival order
  readonly connections: number;
  /**
   * For each connection still open, the recipients accepted in its latest transaction: the one in
   * progress, or the last answered, whose outcome the client may not have recorded yet.
   */
  latestTransactions(): string[][];
  certificate?: string; // the STARTTLS certificate (PEM), for clients that verify it
  waitFor(count: number, timeoutMs?: number): Promise<SinkMessage[]>;
  close(): Promise<void>;
};

function rejection({ code, message }: SmtpRejection): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: SinkMessage[] = [];
  let connections = 0;
  const latest = new Map<string, string[]>(); // by session id, while the connection is open
  const pem = options.tls ? (options.certificate ?? selfSignedCert("localhost")) : undefined;
  const disabledCommands = [...(options.tls ? [] : ["STARTTLS"]), ...(options.auth ? [] : ["AUTH"])];

  const config: SMTPServerOptions = {
    logger: false,
    disabledCommands,
    ...(pem ? { key: pem.key, cert: pem.cert } : {}),
    authOptional: !options.auth,
    authMethods: ["PLAIN", "LOGIN"],
    // The sink tests AUTH with and without STARTTLS.
    allowInsecureAuth: true,
    // Tests close the sink while clients may still hold connections open.
    closeTimeout: 100,
    onConnect(_session, callback) {
      connections++;
      callback();
    },
    onAuth(auth, _session, callback) {
      const expected = options.auth;
      if (expected && auth.username === expected.user && auth.password === expected.pass) {
        return callback(null, { user: auth.username });
      }
      callback(rejection({ code: 535, message: "5.7.8 Authentication credentials invalid" }));
    },
    onMailFrom(address, session, callback) {
      const answer = options.mailFromResponse?.(address.address);
      if (answer) return callback(rejection(answer));
      latest.set(session.id, []);
      callback();
    },
    onRcptTo(address, session, callback) {
      const answer = options.respond?.(address.address);
      if (!answer) latest.get(session.id)?.push(address.address);
      callback(answer ? rejection(answer) : null);
    },
    onClose(session) {
      latest.delete(session.id);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const { mailFrom, rcptTo } = session.envelope;
        const message: SinkMessage = {
          mailFrom: mailFrom ? mailFrom.address : "",
          rcptTo: rcptTo.map((rcpt) => rcpt.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          ...(session.user ? { authUser: session.user } : {}),
        };
        const answer = options.dataResponse?.(message);
        if (answer) return callback(rejection(answer));
        messages.push(message);
        callback();
      });
    },
  };
  const server = new SMTPServer(config);
  // smtp-server re-emits socket errors (a client's failed TLS handshake among
  // them); without a listener they would crash the test process.
  server.on("error", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));

  return {
    port: (server.server.address() as AddressInfo).port,
    messages,
    get connections() {
      return connections;
    },
    latestTransactions: () => [...latest.values()].map((recipients) => [...recipients]),
    ...(pem ? { certificate: pem.cert } : {}),
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`smtp sink: ${messages.length} of ${count} messages after ${timeoutMs} ms`);
        await Bun.sleep(10);
      }
      return messages;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
