// One DNS question to one server over the wire (RFC 1035 §4): UDP first, TCP when the answer is
// truncated. inboxd asks its servers itself because Bun's c-ares binding (1.4.5) reports NODATA
// as ENOTFOUND and splits a TXT record's character-strings into separate records.
import { randomInt } from "node:crypto";
import * as dgram from "node:dgram";
import * as net from "node:net";
import * as dnsPacket from "dns-packet";

export type ServerAddress = { host: string; port: number };
export type WireQuestion = { name: string; type: dnsPacket.RecordType };
/** A resource record with data (every kind but the EDNS pseudo-record). */
export type RecordAnswer = Exclude<dnsPacket.Answer, dnsPacket.OptAnswer>;
export type WireReply = { rcode: string; answers: RecordAnswer[] };

/** A failure to get any answer from a server; `code` uses the names Node's dns module uses. */
export class WireError extends Error {
  constructor(readonly code: "ETIMEOUT" | "ECONNREFUSED" | "EBADRESP", message: string) {
    super(message);
  }
}

// RFC 6891 §6.2.5 leaves the size to the requester; 1232 bytes avoids IP fragmentation on
// every common path (the figure of DNS Flag Day 2020).
const EDNS_UDP_PAYLOAD_SIZE = 1232;
const DNS_PORT = 53;

/** Reads "host", "host:port", "[v6]:port" or a bare IPv6 address, the forms INBOXD_DNS_SERVERS and dns.getServers() use. */
export function parseServerAddress(text: string, defaultPort = DNS_PORT): ServerAddress {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) return { host: bracketed[1], port: Number(bracketed[2] ?? defaultPort) };
  if (net.isIPv6(text)) return { host: text, port: defaultPort };
  const [host, port] = text.split(":");
  return { host, port: Number(port ?? defaultPort) };
}

// RFC 1035 §4.1.1: the RCODE values a stub resolver meets.
const RCODE_NAMES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"];

/** Asks one server one question; resolves with its answer whatever the rcode, rejects with WireError when none came. */
export async function askServer(server: ServerAddress, question: WireQuestion, timeoutMs: number): Promise<WireReply> {
  let reply = await askOverUdp(server, question, timeoutMs, true);
  // RFC 6891 §7: a server that does not know EDNS answers FORMERR; ask again without it.
  if (rcodeOf(reply) === "FORMERR") reply = await askOverUdp(server, question, timeoutMs, false);
  // RFC 7766 §5: a truncated UDP answer is retried over TCP.
  if (reply.flag_tc) reply = await askOverTcp(server, question, timeoutMs);
  const answers = (reply.answers ?? []).filter((answer): answer is RecordAnswer => answer.type !== "OPT");
  return { rcode: rcodeOf(reply), answers };
}

function rcodeOf(packet: dnsPacket.DecodedPacket): string {
  const rcode = (packet.flags ?? 0) & 0x0f; // the low four bits of the second header word
  return RCODE_NAMES[rcode] ?? `RCODE${rcode}`;
}

function encodeQuery(question: WireQuestion, withEdns: boolean): { id: number; bytes: Buffer } {
  // RFC 5452 §9.2: an unpredictable id (and the random source port the OS picks) resists spoofing.
  const id = randomInt(0x10000);
  const bytes = dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name: question.name, type: question.type, class: "IN" }],
    additionals: withEdns ? [{ name: ".", type: "OPT", udpPayloadSize: EDNS_UDP_PAYLOAD_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] : [],
  });
  return { id, bytes };
}

/** RFC 5452 §9.1: an answer is accepted only when its id and question match the query's. */
function answersQuery(reply: dnsPacket.DecodedPacket, id: number, question: WireQuestion): boolean {
  const echoed = reply.questions?.[0];
  return (
    reply.type === "response" &&
    reply.id === id &&
    echoed !== undefined &&
    echoed.type === question.type &&
    echoed.name.toLowerCase() === question.name.toLowerCase()
  );
}

function decodeOrUndefined(bytes: Buffer): dnsPacket.DecodedPacket | undefined {
  try {
    return dnsPacket.decode(bytes);
  } catch {
    return undefined; // garbage is ignored like a forged answer: the query waits on
  }
}

const unreachable = (where: string, error: unknown) => new WireError("ECONNREFUSED", `${where}: ${error instanceof Error ? error.message : String(error)}`);

type Settlers = { succeed: (reply: dnsPacket.DecodedPacket) => void; fail: (error: WireError) => void; hold: (release: () => void) => void };

/**
 * One exchange with a server, settled once: by `succeed`, by `fail`, or by `timeout` after
 * `timeoutMs`; then what it holds (socket) is released. Whatever goes wrong, even a throw while
 * the socket is set up, ends as a WireError rejection: a server that cannot be reached is a
 * temporary DNS failure, never an exception that escapes the look-up.
 */
function exchange(where: string, timeout: WireError, timeoutMs: number, start: (settlers: Settlers) => void): Promise<dnsPacket.DecodedPacket> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let release = () => {};
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        release();
      } catch {
        // the socket is gone already
      }
      outcome();
    };
    const fail = (error: WireError) => settle(() => reject(error));
    const timer = setTimeout(() => fail(timeout), timeoutMs);
    try {
      start({ succeed: (reply) => settle(() => resolve(reply)), fail, hold: (releaser) => (release = releaser) });
    } catch (error) {
      fail(unreachable(where, error));
    }
  });
}

function askOverUdp(server: ServerAddress, question: WireQuestion, timeoutMs: number, withEdns: boolean): Promise<dnsPacket.DecodedPacket> {
  const { id, bytes } = encodeQuery(question, withEdns);
  const where = `${server.host}:${server.port}`;
  return exchange(where, new WireError("ETIMEOUT", `no answer from ${where} within ${timeoutMs} ms`), timeoutMs, ({ succeed, fail, hold }) => {
    // A connected socket takes datagrams from the server's address and port only (RFC 5452 §9.1),
    // and reports an ICMP port-unreachable as ECONNREFUSED instead of waiting for the timeout.
    const socket = dgram.createSocket(net.isIPv6(server.host) ? "udp6" : "udp4");
    hold(() => socket.close());
    socket.on("error", (error) => fail(unreachable(where, error)));
    socket.on("message", (message) => {
      const reply = decodeOrUndefined(message);
      if (reply && answersQuery(reply, id, question)) succeed(reply);
    });
    // Bun (1.4.5) hands a failed connect (no route, a link-local address without a scope) to this
    // callback rather than to an 'error' event; a send on that socket would throw.
    socket.connect(server.port, server.host, (error?: unknown) => {
      if (error) return fail(unreachable(where, error));
      try {
        socket.send(bytes, (sendError) => sendError && fail(unreachable(where, sendError)));
      } catch (sendError) {
        fail(unreachable(where, sendError));
      }
    });
  });
}

function askOverTcp(server: ServerAddress, question: WireQuestion, timeoutMs: number): Promise<dnsPacket.DecodedPacket> {
  const { id, bytes } = encodeQuery(question, true);
  const where = `${server.host}:${server.port}`;
  return exchange(where, new WireError("ETIMEOUT", `no TCP answer from ${where} within ${timeoutMs} ms`), timeoutMs, ({ succeed, fail, hold }) => {
    const socket = net.connect({ host: server.host, port: server.port });
    hold(() => socket.destroy());
    socket.on("error", (error) => fail(unreachable(where, error)));
    socket.on("end", () => fail(new WireError("EBADRESP", `${where} closed the TCP connection without an answer`)));
    // RFC 1035 §4.2.2: each TCP message is preceded by its length in two bytes.
    const length = Buffer.alloc(2);
    length.writeUInt16BE(bytes.length);
    socket.write(Buffer.concat([length, bytes]));
    let received = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, Buffer.from(chunk)]);
      if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
      const reply = decodeOrUndefined(received.subarray(2, 2 + received.readUInt16BE(0)));
      if (reply && answersQuery(reply, id, question)) succeed(reply);
      else fail(new WireError("EBADRESP", `unreadable TCP answer from ${where}`));
    });
  });
}
