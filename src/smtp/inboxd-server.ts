// smtp-server with the connection rules inboxd needs and the library does not offer as options:
// a configurable greeting delay (3.21.6 hard-codes 100 ms), connection caps per client address,
// a deadline for the message data, command lines that end in CRLF only, and replies that carry
// their own enhanced status code. Each is an override of one method of the pinned version's
// classes (smtp-server 3.21.6 ships their types), so no patch of node_modules is needed and
// `npm install` builds the same server as `bun install`.
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { SMTPConnection, type SMTPConnectionOptions } from "smtp-server/lib/smtp-connection.js";
import { SMTPStream, type SMTPStreamOptions } from "smtp-server/lib/smtp-stream.js";
import { hasBareLineBreak } from "./line-breaks";

export interface ConnectionRules {
  /**
   * Wait before the 220 greeting; a client that talks before it is refused (421), like
   * Postfix's pregreet test: bulk senders that do not wait for the greeting give themselves away.
   */
  greetingDelayMs: number;
  maxConnections: number;
  maxConnectionsPerIp: number;
  /** How long the message data may take to arrive once DATA was accepted: the slow-client bound. */
  dataTimeoutMs: number;
}

// RFC 3463 §2: class.subject.detail at the start of a reply text.
const ENHANCED_STATUS = /^[245]\.\d{1,3}\.\d{1,3} /;
const SHUTTING_DOWN = "4.3.2 Server shutting down, try again later";

export class InboxdSmtpServer extends SMTPServer {
  constructor(
    options: SMTPServerOptions,
    readonly rules: ConnectionRules,
  ) {
    super(options);
  }

  // The library's connect(), with inboxd's connection class.
  override connect(socket: Socket | TLSSocket, socketOptions?: SMTPConnectionOptions | null): void {
    const connection = new InboxdConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on("error", (error: Error) => this._onError(error));
    connection.on("connect", (data) => this._onClientConnect(data));
    connection.init();
  }

  /** For shutdown: sends 421 to every session that is not in the middle of a message, which closes it; returns how many remain. */
  closeIdleConnections(): number {
    for (const connection of this.connections) {
      if (!connection._dataStream) connection.send(421, SHUTTING_DOWN);
    }
    return this.connections.size;
  }

  closeAllConnections(): void {
    for (const connection of this.connections) connection.send(421, SHUTTING_DOWN);
  }
}

class InboxdConnection extends SMTPConnection {
  declare _server: InboxdSmtpServer;

  /** Refuses a connection over the caps at once, then greets after the configured delay. */
  override init(): void {
    this._setListeners(() => {
      const refusal = this.admissionRefusal();
      if (refusal) return this.send(421, refusal);
      const { greetingDelayMs } = this._server.rules;
      if (greetingDelayMs === 0) return this.connectionReady();
      setTimeout(() => this.connectionReady(), greetingDelayMs).unref();
    });
  }

  private admissionRefusal(): string | undefined {
    const { connections, rules } = this._server;
    if (connections.size > rules.maxConnections) return `4.7.0 ${this.name} Too many connections, try again later`;
    let fromSameAddress = 0;
    for (const connection of connections) if (connection.remoteAddress === this.remoteAddress) fromSameAddress++;
    if (fromSameAddress > rules.maxConnectionsPerIp) return `4.7.0 ${this.name} Too many connections from your address, try again later`;
    return undefined;
  }

  /** A reply text that starts with an enhanced status code (RFC 2034) keeps it instead of the library's default for the reply code. */
  override send(code: number, data?: string | string[] | null, context?: string | false): void {
    super.send(code, data, typeof data === "string" && ENHANCED_STATUS.test(data) ? false : context);
  }

  /** The library's parser wiring, with a parser that accepts command lines ending in CRLF only. */
  override _createParser(): SMTPStream {
    const parser = new CrlfCommandStream({ maxCommandLength: this._server.options.maxCommandLength }, () => this.refuseBareLineBreak());
    parser.oncommand = (command, callback) => this._onCommand(command, callback);
    parser.on("error", (error: Error) => this.send(421, "Error: " + error.message));
    return parser;
  }

  // Postfix answers the same way with smtpd_forbid_bare_newline = yes: the client and server no
  // longer agree where commands end, so nothing more it sends can be trusted.
  private refuseBareLineBreak(): void {
    this.send(521, "5.5.2 Bare CR or LF in a command line is not allowed (RFC 5321 §2.3.8), closing connection");
    this.close();
  }

  /** Accepts DATA as the library does, and closes the connection if the data is not in by the deadline. */
  override handler_DATA(command: Buffer, callback: () => void): void {
    super.handler_DATA(command, callback);
    const stream = this._dataStream;
    const parser = this._parser;
    if (!stream || !parser) return;
    const timer = setTimeout(() => {
      if (parser._dataMode) this.send(421, "4.4.2 Timeout: the message took too long to arrive, closing connection");
    }, this._server.rules.dataTimeoutMs);
    timer.unref();
    const cancel = () => clearTimeout(timer);
    stream.once("end", cancel);
    stream.once("close", cancel);
  }
}

/** smtp-server's command parser, refusing any chunk of command input with a bare CR or LF. */
class CrlfCommandStream extends SMTPStream {
  constructor(
    options: SMTPStreamOptions,
    private readonly onBareLineBreak: () => void,
  ) {
    super(options);
  }

  override _write(chunk: Buffer, encoding: BufferEncoding | "buffer", next: (error?: Error | null) => void): void {
    if (!this._dataMode && !this.isClosed && chunk.length && hasBareLineBreak(chunk, this.pendingLastByte())) {
      this.onBareLineBreak();
      return next();
    }
    super._write(chunk, encoding, next);
  }

  /** The parser keeps an unfinished line as a 'binary' string. */
  private pendingLastByte(): number | undefined {
    return this._remainder ? this._remainder.charCodeAt(this._remainder.length - 1) : undefined;
  }
}
