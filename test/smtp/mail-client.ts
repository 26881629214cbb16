// A real SMTP client for the tests: nodemailer's SMTPConnection, one connection per message.
import SMTPConnection from "nodemailer/lib/smtp-connection";

export interface SendOptions {
  from: string;
  to: string[];
  /** The RFC 5322 message, CRLF line ends. */
  raw: string | Buffer;
  /** "plain" never upgrades; "starttls" requires STARTTLS and checks the certificate against `ca`. */
  tls?: { mode: "plain" } | { mode: "starttls"; ca: string; servername: string };
  /** How long the client waits for a reply (default 10 s). */
  socketTimeoutMs?: number;
  /** Declares the message's size at MAIL FROM (RFC 1870), as Postfix and most MTAs do. */
  declareSize?: boolean;
  /** The client's address, one of the loopback's (127.0.0.2 …): another peer than the default 127.0.0.1. */
  localAddress?: string;
}

export interface Sent {
  response: string;
  accepted: string[];
  rejected: string[];
  secure: boolean;
}

/** Resolves with nodemailer's result; rejects with its error, which carries `responseCode` and `response`. */
export async function sendMail(port: number, options: SendOptions): Promise<Sent> {
  const tls = options.tls ?? { mode: "plain" };
  const connection = new SMTPConnection({
    host: "127.0.0.1",
    port,
    name: "client.example",
    ignoreTLS: tls.mode === "plain",
    requireTLS: tls.mode === "starttls",
    tls: tls.mode === "starttls" ? { ca: tls.ca, servername: tls.servername } : undefined,
    connectionTimeout: 5000,
    socketTimeout: options.socketTimeoutMs ?? 10_000,
    localAddress: options.localAddress,
  });
  // A connection that breaks (a server killed mid-session) also emits "error", which would go
  // unhandled: the callbacks below get the same error.
  connection.on("error", () => {});
  try {
    await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
    const info = await new Promise<SMTPConnection.SentMessageInfo>((resolve, reject) =>
      connection.send({ from: options.from, to: options.to, size: options.declareSize ? Buffer.byteLength(options.raw) : undefined }, options.raw, (error, result) => (error ? reject(error) : resolve(result))),
    );
    return { response: info.response, accepted: info.accepted.map(String), rejected: info.rejected.map(String), secure: connection.secure };
  } finally {
    connection.quit();
    connection.close();
  }
}
