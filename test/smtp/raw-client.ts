// A raw SMTP client over a plain socket, for the protocol edge cases a real client library will
// not produce (bare line breaks, early talking, pipelining, oversized lines).
import { connect, type Socket } from "node:net";

export interface Reply {
  code: number;
  /** Every line of the reply, without CRLF. */
  lines: string[];
  text: string;
}

export interface RawSession {
  /** Resolves with the next complete reply (a multi-line reply is one). */
  reply(timeoutMs?: number): Promise<Reply>;
  /** Writes bytes exactly as given. */
  write(data: string | Buffer): void;
  /** Writes a command with CRLF and resolves with its reply. */
  command(line: string): Promise<Reply>;
  /** Resolves once the server has closed the connection. */
  closed(timeoutMs?: number): Promise<void>;
  isClosed(): boolean;
  end(): void;
}

/** `localAddress` picks the client's loopback address (127.0.0.2, ...), as if from another host. */
export async function openSession(port: number, options: { waitForGreeting?: boolean; localAddress?: string } = {}): Promise<RawSession> {
  const socket: Socket = connect({ port, host: "127.0.0.1", localAddress: options.localAddress });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => {});
  let buffer = "";
  let closed = false;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  socket.on("data", (chunk) => {
    buffer += chunk.toString("latin1");
    wake();
  });
  socket.on("close", () => {
    closed = true;
    wake();
  });
  const waitFor = async <T>(take: () => T | undefined, timeoutMs: number, what: string): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = take();
      if (value !== undefined) return value;
      if (closed) throw new Error(`the connection closed while waiting for ${what}; received: ${JSON.stringify(buffer)}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received so far: ${JSON.stringify(buffer)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  };
  const takeReply = (): Reply | undefined => {
    const lines: string[] = [];
    let offset = 0;
    for (;;) {
      const end = buffer.indexOf("\r\n", offset);
      if (end === -1) return undefined;
      const line = buffer.slice(offset, end);
      lines.push(line);
      offset = end + 2;
      if (line[3] !== "-") {
        buffer = buffer.slice(offset);
        return { code: Number(line.slice(0, 3)), lines, text: lines.join("\n") };
      }
    }
  };
  const session: RawSession = {
    reply: (timeoutMs = 5000) => waitFor(takeReply, timeoutMs, "a reply"),
    write: (data) => socket.write(data),
    async command(line) {
      socket.write(line + "\r\n");
      return session.reply();
    },
    closed: (timeoutMs = 5000) => waitFor(() => (closed ? true : undefined), timeoutMs, "the server to close").then(() => undefined),
    isClosed: () => closed,
    end: () => socket.destroy(),
  };
  if (options.waitForGreeting !== false) {
    const greeting = await session.reply();
    if (greeting.code !== 220) throw new Error(`unexpected greeting: ${greeting.text}`);
  }
  return session;
}

/** EHLO, MAIL FROM and one RCPT TO each; throws unless all are accepted. */
export async function startTransaction(session: RawSession, from: string, to: string[]): Promise<void> {
  for (const line of [`EHLO client.example`, `MAIL FROM:<${from}>`, ...to.map((rcpt) => `RCPT TO:<${rcpt}>`)]) {
    const reply = await session.command(line);
    if (reply.code !== 250) throw new Error(`${line}: ${reply.text}`);
  }
}
