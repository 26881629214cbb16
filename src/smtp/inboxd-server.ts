// smtp-server with the connection rules inboxd needs and the library does not offer as options:
// a configurable greeting delay (3.21.6 hard-codes 100 ms), connection caps per client address,
// deadlines for the message data, for each command line and for the whole session, command lines
// that end in CRLF only, and replies that carry their own enhanced status code. Each is an override
// of methods of the pinned version's classes (smtp-server 3.21.6 ships their types), so no patch
// of node_modules is needed and `npm install` builds the same server as `bun install`.
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { SMTPConnection, type SMTPConnectionOptions } from "smtp-server/lib/smtp-connection.js";
import type { SMTPStreamOptions } from "smtp-server/lib/smtp-stream.js";
import { peerGroup } from "../net/peer-group";
import { IndexedDataStream } from "./data-stream";
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
  /**
   * How long one command line may take to arrive, from its first byte to its CRLF. The idle
   * timeout (socketTimeout) restarts on every byte, so without this a client trickling a byte
   * now and then would hold the connection for as long as it likes.
   */
  commandTimeoutMs: number;
  /**
   * How long one connection may last in all, from connect. When it passes, the session is closed
   * with 421; a message (or any command) under way gets its reply first.
   */
  sessionTimeoutMs: number;
}

/**
 * The addresses of MAIL and RCPT commands whose path held bytes past ASCII on the wire. smtp-server
 * turns an IDN domain's A-labels (`xn--...`, ASCII) into U-labels before the handlers see the
 * address, so only the command line tells them from a domain sent in UTF-8, which needs SMTPUTF8
 * (RFC 6531 §3.3).
 */
const sentInUtf8 = new WeakSet<object>();

/** Whether this MAIL or RCPT address was written in UTF-8 on the wire, its domain or its local part. */
export const wasSentInUtf8 = (address: object): boolean => sentInUtf8.has(address);

// RFC 3463 §2: class.subject.detail at the start of a reply text.
const ENHANCED_STATUS = /^[245]\.\d{1,3}\.\d{1,3} /;
const SHUTTING_DOWN = "4.3.2 Server shutting down, try again later";

export class InboxdSmtpServer extends SMTPServer {
  constructor(
    options: SMTPServerOptions,
    readonly rules: ConnectionRules,
  ) {
    // A client that sends its message (and QUIT) and then ends its side of the connection is still
    // owed the replies: closed with it, the socket dropped the 250 of a message it had stored, and
    // the sender, seeing no reply, sent it again (RFC 5321 §4.1.1.4). The connection closes once
    // the parser has answered all it was sent (_createParser).
    super({ ...options, allowHalfOpen: true });
  }

  // The library's connect(), with inboxd's connection class.
  override connect(socket: Socket | TLSSocket, socketOptions?: SMTPConnectionOptions | null): void {
    const connection = new InboxdConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on("error", (error: Error) => this._onError(error));
    connection.on("connect", (data) => this._onClientConnect(data));
    connection.init();
  }

  /**
   * For shutdown: sends 421 to every session that is not in the middle of a message, which closes
   * it; returns how many remain. `answering`: sessions whose data has all come (smtp-server has
   * let go of its stream) and whose reply is owed: a 421 then would hide that it was accepted.
   */
  closeIdleConnections(answering: (sessionId: string) => boolean): number {
    for (const connection of this.connections) {
      if (!connection._dataStream && !answering(connection.id)) connection.send(421, SHUTTING_DOWN);
    }
    return this.connections.size;
  }

  /** Sends 421 with `text` to one session, which closes it whatever it was doing. */
  closeConnection(sessionId: string, text: string): void {
    for (const connection of this.connections) if (connection.id === sessionId) connection.send(421, text);
  }

  /** Sends 421 to every session but those `spared`, which closes them whatever they were doing. */
  closeAllConnections(spared: (sessionId: string) => boolean = () => false): void {
    for (const connection of this.connections) if (!spared(connection.id)) connection.send(421, SHUTTING_DOWN);
  }
}

class InboxdConnection extends SMTPConnection {
  declare _server: InboxdSmtpServer;
  /** Armed while a command line is under way: from its first byte until its line break. */
  private commandTimer: ReturnType<typeof setTimeout> | undefined;
  private sessionTimer: ReturnType<typeof setTimeout> | undefined;
  /** The session limit passed while a reply was owed: the connection closes right after that reply. */
  private closeAfterReply = false;
  private peerOfConnection: string | undefined;

  /** The client's peer group, found once: each new connection compares it with every open one's. */
  get peer(): string {
    return (this.peerOfConnection ??= peerGroup(this.remoteAddress));
  }

  /** Refuses a connection over the caps at once, then greets after the configured delay. */
  override init(): void {
    this.sessionTimer = setTimeout(() => this.sessionTimeUp(), this._server.rules.sessionTimeoutMs);
    this.sessionTimer.unref();
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
    for (const connection of connections) if ((connection as InboxdConnection).peer === this.peer) fromSameAddress++;
    if (fromSameAddress > rules.maxConnectionsPerIp) return `4.7.0 ${this.name} Too many connections from your address, try again later`;
    return undefined;
  }

  /**
   * A reply text that starts with an enhanced status code (RFC 2034) keeps it instead of the library's default for the reply code.
   * Once the session limit has passed, the reply that was owed is followed by the 421 that closes the connection.
   */
  override send(code: number, data?: string | string[] | null, context?: string | false): void {
    const reply = () => super.send(code, data, typeof data === "string" && ENHANCED_STATUS.test(data) ? false : context);
    const socket = this._socket;
    // The library writes only while the socket's readyState is "open", both sides open; a client
    // that has ended its side ("writeOnly", allowHalfOpen) is still owed the replies to what it sent.
    if (socket.readyState === "writeOnly") {
      Object.defineProperty(socket, "readyState", { value: "open", configurable: true });
      try {
        reply();
      } finally {
        Reflect.deleteProperty(socket, "readyState");
      }
    } else reply();
    // 354 only invites the message data; the reply to the message comes after it. The library
    // calls _resetSession() and resumes the parser after this returns, by which time the parser
    // is closed, so nothing the client pipelined after the message runs.
    if (this.closeAfterReply && code !== 421 && code !== 354 && !this._closing && !this._closed) {
      this.closeAfterReply = false;
      this.send(421, this.sessionLimitText());
    }
  }

  override close(): void {
    this.clearTimers();
    super.close();
  }

  /** The socket closed, whoever closed it (after STARTTLS the TLS socket's close lands here too). */
  override _onClose(): void {
    this.clearTimers();
    super._onClose();
  }

  private clearTimers(): void {
    clearTimeout(this.commandTimer);
    clearTimeout(this.sessionTimer);
    this.commandTimer = this.sessionTimer = undefined;
  }

  // RFC 5321 §4.5.3.2 has the server wait a bounded time for each command (§4.5.3.2.7 suggests
  // 5 minutes). The library's idle timeout is a socket timeout that any byte restarts, so it only
  // covers the silence before a command's first byte (and after the last reply); this deadline
  // runs from a command line's first byte to its line break, however slowly the bytes come.
  // The message data has a deadline of its own (handler_DATA).
  private commandLineStarted(): void {
    if (this.commandTimer || this._closing || this._closed) return;
    this.commandTimer = setTimeout(() => {
      this.commandTimer = undefined;
      if (this._closing || this._closed) return;
      this.send(421, `4.4.2 ${this.name} Timeout: the command line took too long to arrive, closing connection`);
    }, this._server.rules.commandTimeoutMs);
    this.commandTimer.unref();
  }

  private commandLineEnded(): void {
    clearTimeout(this.commandTimer);
    this.commandTimer = undefined;
  }

  /**
   * The whole-session limit: a session that owes nothing is closed at once; one with a message
   * (or any command) under way is closed right after its reply, so a message that made it in
   * is not cut off, and a message still arriving stays under the data deadline.
   */
  private sessionTimeUp(): void {
    this.sessionTimer = undefined;
    if (this._closing || this._closed) return;
    if (this._dataStream || this._handlerPending) {
      this.closeAfterReply = true;
      return;
    }
    this.send(421, this.sessionLimitText());
  }

  private sessionLimitText(): string {
    return `4.4.2 ${this.name} Timeout: session time limit reached, closing connection`;
  }

  override _parseAddressCommand(name: string, command: Buffer | string): ReturnType<SMTPConnection["_parseAddressCommand"]> {
    const parsed = super._parseAddressCommand(name, command);
    if (parsed) {
      const line = Buffer.isBuffer(command) ? command : Buffer.from(command);
      const path = line.subarray(line.indexOf("<"), line.indexOf(">") + 1);
      if (path.some((byte) => byte >= 0x80)) sentInUtf8.add(parsed);
    }
    return parsed;
  }

  /** The library's parser wiring, with a parser that accepts command lines ending in CRLF only and reports when a command line is under way. */
  override _createParser(): IndexedDataStream {
    const parser = new CrlfCommandStream(
      { maxCommandLength: this._server.options.maxCommandLength },
      { bareLineBreak: () => this.refuseBareLineBreak(), lineStarted: () => this.commandLineStarted() },
    );
    parser.oncommand = (command, callback) => {
      this.commandLineEnded();
      this._onCommand(command, callback);
    };
    parser.on("error", (error: Error) => this.send(421, "Error: " + error.message));
    // The client ended its side (a TCP half-close, the socket kept open: InboxdSmtpServer) and
    // every command it sent has been answered, the reply to its message among them: nothing is
    // left to say.
    parser.once("finish", () => {
      if (!this._closing && !this._closed) this.close();
    });
    return parser;
  }

  // Postfix answers the same way with smtpd_forbid_bare_newline = yes: the client and server no
  // longer agree where commands end, so nothing more it sends can be trusted.
  private refuseBareLineBreak(): void {
    this.send(521, "5.5.2 Bare CR or LF in a command line is not allowed (RFC 5321 section 2.3.8), closing connection");
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

interface CommandStreamEvents {
  /** A chunk of command input had a bare CR or LF. */
  bareLineBreak(): void;
  /** Command input arrived, or a partial line is left over: a command line is under way until oncommand fires. */
  lineStarted(): void;
}

/** smtp-server's command parser, refusing any chunk of command input with a bare CR or LF, and telling when a command line is under way. */
class CrlfCommandStream extends IndexedDataStream {
  constructor(
    options: SMTPStreamOptions,
    private readonly events: CommandStreamEvents,
  ) {
    super(options);
  }

  // The library parses each chunk of command input at once: complete lines go to oncommand
  // (which may wait for its handler before the next line is looked at), and an unfinished line is
  // kept in _remainder when the chunk is done. So a line is under way from the chunk that brings
  // its first byte (oncommand clears that when the chunk completes lines), and again whenever a
  // chunk leaves a partial line behind. While a handler runs, no chunk is parsed and nothing is
  // armed: the client is not timed for the server's own slowness.
  override _write(chunk: Buffer, encoding: BufferEncoding | "buffer", next: (error?: Error | null) => void): void {
    if (this._dataMode || this.isClosed || !chunk.length) return super._write(chunk, encoding, next);
    if (hasBareLineBreak(chunk, this.pendingLastByte())) {
      this.events.bareLineBreak();
      return next();
    }
    this.events.lineStarted();
    super._write(chunk, encoding, (error) => {
      if (this._remainder && !this._dataMode && !this.isClosed) this.events.lineStarted();
      next(error);
    });
  }

  /** The parser keeps an unfinished line as a 'binary' string. */
  private pendingLastByte(): number | undefined {
    return this._remainder ? this._remainder.charCodeAt(this._remainder.length - 1) : undefined;
  }
}
