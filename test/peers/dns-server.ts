// A real authoritative DNS server on 127.0.0.1 for tests: it answers over UDP and TCP on one
// port from records the test sets, so every inboxd look-up crosses a real socket.
import * as dgram from "node:dgram";
import * as net from "node:net";
import * as dnsPacket from "dns-packet";

export type TestRecordType = "MX" | "A" | "AAAA" | "TXT" | "CNAME" | "PTR";
export type TestMxValue = { exchange: string; priority: number };
/** One TXT record: a string (split into 255-byte character-strings on the wire), or its character-strings as given. */
export type TestTxtValue = string | string[];
export type TestRecordValues = {
  MX: TestMxValue[];
  A: string[];
  AAAA: string[];
  TXT: TestTxtValue[];
  CNAME: string[];
  PTR: string[];
};
/** How the server fails the next queries for a name: an error code, or no answer at all. */
export type FailureMode = "SERVFAIL" | "REFUSED" | "TIMEOUT";
export type ReceivedQuery = { name: string; type: string; transport: "udp" | "tcp" };

export type DnsServer = {
  /** "127.0.0.1:PORT", the form INBOXD_DNS_SERVERS and createResolver take. */
  address: string;
  port: number;
  /** Every query answered so far, oldest first. */
  queries: ReceivedQuery[];
  set<T extends TestRecordType>(name: string, type: T, values: TestRecordValues[T]): void;
  remove(name: string, type?: TestRecordType): void;
  setZoneFile(text: string): void;
  /** The next `times` queries for `name` (of `type` only, when given) fail as `mode` says. */
  failNext(name: string, mode?: FailureMode, times?: number, type?: TestRecordType): void;
  /** Answers about `name` and every name below it are sent `ms` late (0: at once again), as a slow name server's. */
  delay(name: string, ms: number): void;
  close(): Promise<void>;
};

const TTL_SECONDS = 60;
// RFC 1035 §4.2.1: without EDNS a UDP answer is at most 512 bytes.
const CLASSIC_UDP_LIMIT = 512;
const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const MAX_CNAME_CHAIN = 8;

type Failure = { mode: FailureMode; remaining: number; type?: TestRecordType };
type RecordSet = Partial<{ [T in TestRecordType]: TestRecordValues[T] }>;

export async function startDnsServer(): Promise<DnsServer> {
  const zone = new Map<string, RecordSet>();
  const failures = new Map<string, Failure>();
  const delays = new Map<string, number>();
  const queries: ReceivedQuery[] = [];

  /** The delay set for the name or the closest name above it. */
  function delayOf(name: string): number {
    for (let owner = normalizeName(name); owner; owner = owner.slice(owner.indexOf(".") + 1 || owner.length)) {
      const ms = delays.get(owner);
      if (ms !== undefined) return ms;
    }
    return 0;
  }

  function answer(query: dnsPacket.DecodedPacket, transport: "udp" | "tcp"): Buffer | undefined {
    const question = query.questions?.[0];
    const base = { type: "response" as const, id: query.id, questions: query.questions ?? [] };
    if (!question) return dnsPacket.encode({ ...base, flags: RCODE.NOTIMP });
    queries.push({ name: question.name, type: question.type, transport });

    const failure = takeFailure(failures, question.name, question.type);
    if (failure === "TIMEOUT") return undefined;
    if (failure) return dnsPacket.encode({ ...base, flags: recursionFlags(query) | RCODE[failure] });

    const { answers, rcode } = lookUp(zone, question);
    const full = dnsPacket.encode({ ...base, flags: recursionFlags(query) | rcode, answers });
    if (transport === "tcp") return full;

    // RFC 6891 §6.2.5: honour the requester's advertised payload size; RFC 1035 §4.2.1 otherwise.
    // RFC 7766 §6.2.1: what does not fit is sent with TC set so the client retries over TCP.
    const ednsOption = query.additionals?.find((record) => record.type === "OPT");
    const limit = ednsOption && "udpPayloadSize" in ednsOption ? Math.max(ednsOption.udpPayloadSize, CLASSIC_UDP_LIMIT) : CLASSIC_UDP_LIMIT;
    if (full.length <= limit) return full;
    return dnsPacket.encode({ ...base, flags: recursionFlags(query) | rcode | dnsPacket.TRUNCATED_RESPONSE });
  }

  /** The answer, and how long it waits before it is sent. */
  const delayedAnswer = (query: dnsPacket.DecodedPacket, transport: "udp" | "tcp") => {
    const reply = answer(query, transport);
    return reply && { reply, delayMs: delayOf(query.questions?.[0]?.name ?? "") };
  };
  const connections = new Set<net.Socket>();
  // A late answer may fall after close, when its socket can no longer send.
  let closed = false;
  const { udp, tcp, port } = await bindBoth(
    (message, peer, socket) => {
      const answered = safeAnswer(message, (query) => delayedAnswer(query, "udp"));
      if (answered) sendAfter(answered.delayMs, () => closed || socket.send(answered.reply, peer.port, peer.address));
    },
    (socket) => {
      connections.add(socket);
      socket.on("close", () => connections.delete(socket));
      serveTcp(socket, (query) => delayedAnswer(query, "tcp"));
    },
  );

  return {
    address: `127.0.0.1:${port}`,
    port,
    queries,
    set(name, type, values) {
      if (type === "TXT") (values as TestTxtValue[]).forEach(assertCharacterStrings);
      const key = normalizeName(name);
      const records = zone.get(key) ?? {};
      (records as Record<string, unknown>)[type] = values;
      zone.set(key, records);
    },
    remove(name, type) {
      const key = normalizeName(name);
      if (!type) return void zone.delete(key);
      const records = zone.get(key);
      if (!records) return;
      delete records[type];
      if (Object.keys(records).length === 0) zone.delete(key);
    },
    setZoneFile(text) {
      // Each name and type in the text gets exactly the records the text lists for it.
      const loaded = new Map<string, RecordSet>();
      for (const { name, type, value } of parseZoneFile(text)) {
        if (type === "TXT") assertCharacterStrings(value);
        const records = loaded.get(name) ?? {};
        ((records[type] ??= []) as unknown[]).push(value);
        loaded.set(name, records);
      }
      for (const [name, records] of loaded) zone.set(name, { ...zone.get(name), ...records });
    },
    failNext(name, mode = "SERVFAIL", times = 1, type) {
      failures.set(normalizeName(name), { mode, remaining: times, type });
    },
    delay(name, ms) {
      if (ms > 0) delays.set(normalizeName(name), ms);
      else delays.delete(normalizeName(name));
    },
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        udp.close();
        tcp.close(() => resolve());
        // Clients may keep their TCP connection open for more queries (RFC 7766 §6.2.1).
        for (const socket of connections) socket.destroy();
      }),
  };
}

function lookUp(zone: Map<string, RecordSet>, question: dnsPacket.Question): { answers: dnsPacket.Answer[]; rcode: number } {
  const answers: dnsPacket.Answer[] = [];
  let owner = question.name;
  // RFC 1034 §4.3.2 step 3a: a CNAME at the name is answered and followed, unless CNAME was asked for.
  for (let hops = 0; hops < MAX_CNAME_CHAIN; hops++) {
    const records = zone.get(normalizeName(owner));
    if (!records) {
      // RFC 8020 §2: a name with names below it exists (NODATA); RFC 6604 §3: the rcode is the chain's last name's.
      return { answers, rcode: hasDescendants(zone, owner) ? RCODE.NOERROR : RCODE.NXDOMAIN };
    }
    const alias = records.CNAME?.[0];
    if (!alias || question.type === "CNAME") {
      answers.push(...encodeRecords(owner, question.type, records));
      return { answers, rcode: RCODE.NOERROR };
    }
    answers.push({ name: owner, type: "CNAME", ttl: TTL_SECONDS, data: alias });
    owner = alias;
  }
  return { answers, rcode: RCODE.SERVFAIL };
}

function hasDescendants(zone: Map<string, RecordSet>, name: string): boolean {
  const suffix = `.${normalizeName(name)}`;
  return [...zone.keys()].some((key) => key.endsWith(suffix));
}

function encodeRecords(owner: string, type: string, records: RecordSet): dnsPacket.Answer[] {
  const common = { name: owner, ttl: TTL_SECONDS };
  switch (type) {
    case "MX":
      return (records.MX ?? []).map((mx) => ({ ...common, type: "MX", data: { preference: mx.priority, exchange: mx.exchange } }));
    case "A":
    case "AAAA":
    case "CNAME":
    case "PTR":
      return (records[type] ?? []).map((data) => ({ ...common, type, data }));
    case "TXT":
      return (records.TXT ?? []).map((value) => ({ ...common, type: "TXT", data: typeof value === "string" ? characterStrings(value) : value }));
    default:
      return [];
  }
}

/** RFC 1035 §3.3.14: a TXT record is a sequence of character-strings of at most 255 bytes each. */
function characterStrings(value: string): Buffer[] {
  const bytes = Buffer.from(value);
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += 255) chunks.push(bytes.subarray(offset, offset + 255));
  return chunks.length ? chunks : [Buffer.alloc(0)];
}

/** Refuses, when it is set rather than when it is asked for, a TXT record the wire cannot carry. */
function assertCharacterStrings(value: TestTxtValue): void {
  for (const part of typeof value === "string" ? [] : value) {
    const length = Buffer.byteLength(part);
    if (length > 255) throw new Error(`a TXT character-string is at most 255 bytes (RFC 1035 §3.3), got ${length}`);
  }
}

function recursionFlags(query: dnsPacket.DecodedPacket): number {
  // Answer as a recursive resolver would, so stub resolvers accept the answer as final.
  return dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_AVAILABLE | (query.flag_rd ? dnsPacket.RECURSION_DESIRED : 0);
}

function takeFailure(failures: Map<string, Failure>, name: string, type: string): FailureMode | undefined {
  const key = normalizeName(name);
  const failure = failures.get(key);
  if (!failure || (failure.type && failure.type !== type)) return undefined;
  if (--failure.remaining <= 0) failures.delete(key);
  return failure.mode;
}

type Answered = { reply: Buffer; delayMs: number };

function sendAfter(delayMs: number, send: () => void): void {
  if (delayMs > 0) setTimeout(send, delayMs);
  else send();
}

function safeAnswer(message: Buffer, respond: (query: dnsPacket.DecodedPacket) => Answered | undefined): Answered | undefined {
  try {
    return respond(dnsPacket.decode(message));
  } catch {
    return undefined; // a datagram that is not a DNS query gets no answer
  }
}

/** RFC 1035 §4.2.2: over TCP each message is preceded by its two-byte length. */
function serveTcp(socket: net.Socket, respond: (query: dnsPacket.DecodedPacket) => Answered | undefined): void {
  let pending = Buffer.alloc(0);
  socket.on("error", () => socket.destroy());
  socket.on("data", (chunk) => {
    pending = Buffer.concat([pending, Buffer.from(chunk)]);
    while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
      const message = pending.subarray(2, 2 + pending.readUInt16BE(0));
      pending = pending.subarray(2 + message.length);
      const answered = safeAnswer(message, respond);
      if (!answered) continue;
      const length = Buffer.alloc(2);
      length.writeUInt16BE(answered.reply.length);
      sendAfter(answered.delayMs, () => socket.writable && socket.write(Buffer.concat([length, answered.reply])));
    }
  });
}

function bindUdp(socket: dgram.Socket): Promise<number> {
  return new Promise((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(0, "127.0.0.1", () => resolve(socket.address().port));
  });
}

/**
 * A UDP socket and a TCP listener on one free port. The UDP port is picked first; when a TCP
 * socket already holds that number (ephemeral ports are shared by every test on the machine),
 * both are given up and another port is tried.
 */
export async function bindBoth(
  onMessage: (message: Buffer, peer: dgram.RemoteInfo, socket: dgram.Socket) => void,
  onConnection: (socket: net.Socket) => void,
): Promise<{ udp: dgram.Socket; tcp: net.Server; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const udp = dgram.createSocket("udp4");
    udp.on("message", (message, peer) => onMessage(message, peer, udp));
    const port = await bindUdp(udp);
    const tcp = net.createServer(onConnection);
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once("error", reject);
        tcp.listen(port, "127.0.0.1", () => resolve());
      });
      return { udp, tcp, port };
    } catch (error) {
      udp.close();
      if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt >= 20) throw error;
    }
  }
}

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

type ZoneRecord = { [T in TestRecordType]: { name: string; type: T; value: TestRecordValues[T][number] } }[TestRecordType];

const RECORD_TYPES = new Set<string>(["MX", "A", "AAAA", "TXT", "CNAME"]);
const CLASSES = new Set(["IN", "CH", "HS", "CS"]);

/**
 * Reads master-file lines (RFC 1035 §5.1), each naming its absolute owner: `name [ttl] [class] type data`,
 * `;` comments, parentheses spanning lines, and TXT data as one or more quoted character-strings.
 */
function parseZoneFile(text: string): ZoneRecord[] {
  const records: ZoneRecord[] = [];
  for (const tokens of zoneEntries(text)) {
    const [owner, ...rest] = tokens;
    while (rest.length && (/^\d+$/.test(rest[0].text) || CLASSES.has(rest[0].text.toUpperCase())) && !rest[0].quoted) rest.shift();
    const type = rest.shift()?.text.toUpperCase() ?? "";
    if (!RECORD_TYPES.has(type)) throw new Error(`zone file: unsupported record type "${type}" for ${owner.text}`);
    const name = normalizeName(owner.text);
    const data = rest.map((token) => token.text);
    switch (type) {
      case "MX":
        records.push({ name, type, value: { priority: Number(data[0]), exchange: normalizeName(data[1] ?? "") || "." } });
        break;
      case "TXT":
        records.push({ name, type, value: data });
        break;
      case "A":
      case "AAAA":
      case "CNAME":
        records.push({ name, type, value: data[0] ?? "" });
        break;
    }
  }
  return records;
}

type ZoneToken = { text: string; quoted: boolean };

/** Splits master-file text into entries of tokens, joining lines inside parentheses. */
function zoneEntries(text: string): ZoneToken[][] {
  const entries: ZoneToken[][] = [];
  let current: ZoneToken[] = [];
  let depth = 0;
  let index = 0;
  const endEntry = () => {
    if (current.length) entries.push(current);
    current = [];
  };
  while (index < text.length) {
    const char = text[index];
    if (char === "\n") {
      if (depth === 0) endEntry();
      index++;
    } else if (char === ";") {
      while (index < text.length && text[index] !== "\n") index++;
    } else if (char === "(" || char === ")") {
      depth += char === "(" ? 1 : -1;
      index++;
    } else if (char === '"') {
      let value = "";
      index++;
      while (index < text.length && text[index] !== '"') {
        if (text[index] === "\\") index++; // RFC 1035 §5.1: \X is the character X
        value += text[index++] ?? "";
      }
      index++;
      current.push({ text: value, quoted: true });
    } else if (/\s/.test(char)) {
      index++;
    } else {
      let value = "";
      while (index < text.length && !/[\s;()"]/.test(text[index])) value += text[index++];
      current.push({ text: value, quoted: false });
    }
  }
  endEntry();
  return entries;
}
