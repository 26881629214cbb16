// Fuzz target: DNS responses off the wire (src/dns/wire.ts, decoded by dns-packet, and what
// src/dns/resolver.ts reads from them). Any host on the path can answer a look-up; whatever it
// sends, askServer resolves or rejects with WireError, and the resolver with DnsLookupError.
//
// A loopback server answers each query with the fuzzed bytes first and, unless the case is about
// silence, a well-formed answer after them, so a look-up never waits for its timeout unless the
// fuzzed bytes made it do so.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as dgram from "node:dgram";
import * as net from "node:net";
import * as dnsPacket from "dns-packet";
import fc from "fast-check";
import { createResolver, DnsLookupError } from "../../src/dns/resolver";
import { askServer, WireError } from "../../src/dns/wire";
import { bindBoth } from "../peers/dns-server";
import { fuzz, testTimeout, withinTime } from "./budget";

// Loopback answers take well under a millisecond; a late one is an ETIMEOUT, which the properties allow.
const TIMEOUT_MS = 60;

type Answerer = (query: dnsPacket.DecodedPacket) => { udp: Buffer[]; tcp: Buffer[] };
let answer: Answerer = () => ({ udp: [], tcp: [] });
let udp: dgram.Socket;
let tcp: net.Server;
let port = 0;

beforeAll(async () => {
  ({ udp, tcp, port } = await bindBoth(
    (message, peer, socket) => {
      let query: dnsPacket.DecodedPacket;
      try {
        query = dnsPacket.decode(message);
      } catch {
        return;
      }
      for (const datagram of answer(query).udp) socket.send(datagram, peer.port, peer.address);
    },
    (socket) => {
      socket.on("error", () => {});
      let received = Buffer.alloc(0);
      socket.on("data", (chunk) => {
        received = Buffer.concat([received, Buffer.from(chunk)]);
        if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
        const query = dnsPacket.decode(received.subarray(2, 2 + received.readUInt16BE(0)));
        const chunks = answer(query).tcp;
        for (const piece of chunks) socket.write(piece);
        socket.end();
      });
    },
  ));
});
afterAll(() => {
  udp.close();
  tcp.close();
});

type Record = dnsPacket.Answer;
const name = fc.constantFrom("fuzz.example.test", "alias.example.test", "FUZZ.Example.Test", "other.example.test", ".", "a.b.c.d.e.example.test");
const record: fc.Arbitrary<Record> = fc.oneof(
  fc.tuple(name, fc.ipV4()).map(([n, data]): Record => ({ name: n, type: "A", ttl: 60, data })),
  fc.tuple(name, fc.ipV6()).map(([n, data]): Record => ({ name: n, type: "AAAA", ttl: 60, data })),
  fc.tuple(name, fc.nat(65535), fc.oneof(fc.domain(), fc.constant("."))).map(([n, preference, exchange]): Record => ({ name: n, type: "MX", ttl: 60, data: { preference, exchange } })),
  fc.tuple(name, fc.array(fc.string({ maxLength: 255 }).filter((s) => Buffer.byteLength(s) <= 255), { maxLength: 4 })).map(([n, data]): Record => ({ name: n, type: "TXT", ttl: 60, data })),
  fc.tuple(name, name).map(([n, data]): Record => ({ name: n, type: "CNAME", ttl: 60, data })),
  fc.tuple(name, fc.domain()).map(([n, data]): Record => ({ name: n, type: "PTR", ttl: 60, data })),
  fc.tuple(name, fc.nat(65535), fc.domain()).map(([n, port, target]): Record => ({ name: n, type: "SRV", ttl: 60, data: { priority: 1, weight: 1, port, target } })),
  fc.tuple(name, fc.constantFrom("issue", "iodef"), fc.string({ maxLength: 30 })).map(([n, tag, value]): Record => ({ name: n, type: "CAA", ttl: 60, data: { flags: 0, tag, value } })),
);

type Question = { name: string; type: "A" | "AAAA" | "MX" | "TXT" | "CNAME" | "PTR" };

/** A response to `query` holding `records`: the id and question echoed, so the client takes it. */
function responseTo(query: dnsPacket.DecodedPacket, records: Record[], rcode: number, truncated: boolean): Buffer {
  return dnsPacket.encode({
    type: "response",
    id: query.id,
    flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | rcode,
    questions: query.questions,
    answers: records,
  });
}

/** Bytes bent at a few places; the first two (the id) are put back now and then, so the reply is read further. */
const edits = fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("flip", "cut", "insert", "truncate")), { minLength: 1, maxLength: 6 });
function bend(bytes: Buffer, changes: [number, number, string][], keepId: boolean): Buffer {
  let out = Buffer.from(bytes);
  for (const [at, value, op] of changes) {
    const i = out.length === 0 ? 0 : at % out.length;
    if (op === "flip" && out.length > 0) out[i] = value;
    else if (op === "cut") out = Buffer.concat([out.subarray(0, i), out.subarray(i + 1 + (value % 8))]);
    else if (op === "insert") out = Buffer.concat([out.subarray(0, i), Buffer.from([value, value ^ 0xc0]), out.subarray(i)]);
    else if (op === "truncate") out = out.subarray(0, i);
  }
  if (keepId && out.length >= 2 && bytes.length >= 2) bytes.copy(out, 0, 0, 2);
  return out;
}

const framed = (message: Buffer) => Buffer.concat([Buffer.from([message.length >> 8, message.length & 0xff]), message]);

/** One scenario: what the server sends over UDP and TCP, as functions of the query. */
const scenario = fc.record({
  records: fc.array(record, { maxLength: 6 }),
  rcode: fc.constantFrom(0, 0, 0, 1, 2, 3, 4, 5, 9, 15),
  truncated: fc.boolean(),
  garbage: fc.oneof(
    fc.uint8Array({ maxLength: 600 }).map((b) => ({ kind: "random" as const, bytes: Buffer.from(b) })),
    fc.tuple(edits, fc.boolean()).map(([changes, keepId]) => ({ kind: "bent" as const, changes, keepId })),
  ),
  // What else the server does: follow up with a good answer, or leave the client waiting.
  followUp: fc.constantFrom("good", "good", "good", "good", "good", "silence"),
  tcpFraming: fc.constantFrom("whole", "split", "short-length", "long-length", "empty"),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function answererFor(s: Scenario): Answerer {
  return (query) => {
    const good = responseTo(query, s.records, s.rcode, s.truncated);
    const fuzzed = s.garbage.kind === "random" ? s.garbage.bytes : bend(good, s.garbage.changes, s.garbage.keepId);
    const udpReplies = [fuzzed, ...(s.followUp === "good" ? [good] : [])];
    // Over TCP the answer is never truncated; the framing itself is what gets bent.
    const whole = responseTo(query, s.records, s.rcode, false);
    const tcpReplies = {
      whole: [framed(whole)],
      split: [framed(whole).subarray(0, 3), framed(whole).subarray(3)],
      "short-length": [Buffer.concat([Buffer.from([0, Math.max(0, whole.length - 5)]), whole])],
      "long-length": [Buffer.concat([Buffer.from([0xff, 0xff]), whole])],
      empty: [],
    }[s.tcpFraming];
    return { udp: udpReplies, tcp: tcpReplies };
  };
}

const questionType = fc.constantFrom<Question["type"]>("A", "AAAA", "MX", "TXT", "CNAME", "PTR");

describe("fuzz: DNS answers off the wire", () => {
  test(
    "askServer resolves or rejects with WireError, within its timeout",
    async () => {
      await fuzz(
        "dns/ask-server",
        fc.asyncProperty(scenario, questionType, async (s, type) => {
          answer = answererFor(s);
          let outcome: unknown;
          try {
            outcome = await withinTime("askServer", () => askServer({ host: "127.0.0.1", port }, { name: "fuzz.example.test", type }, TIMEOUT_MS), 3 * TIMEOUT_MS + 1000);
          } catch (error) {
            expect(error).toBeInstanceOf(WireError);
            return;
          }
          const reply = outcome as Awaited<ReturnType<typeof askServer>>;
          expect(typeof reply.rcode).toBe("string");
          for (const record of reply.answers) {
            expect(record.type).not.toBe("OPT");
            expect(typeof record.name).toBe("string");
          }
        }),
        { ciRuns: 1_000 },
      );
    },
    testTimeout(),
  );

  test(
    "the resolver answers arrays of the asked type or throws DnsLookupError",
    async () => {
      const resolver = createResolver([`127.0.0.1:${port}`], { timeoutMs: TIMEOUT_MS, tries: 1 });
      await fuzz(
        "dns/resolver",
        fc.asyncProperty(scenario, questionType, async (s, type) => {
          answer = answererFor(s);
          const call: () => Promise<unknown[]> = {
            A: () => resolver.a("fuzz.example.test"),
            AAAA: () => resolver.aaaa("fuzz.example.test"),
            MX: () => resolver.mx("fuzz.example.test"),
            TXT: () => resolver.txt("fuzz.example.test"),
            CNAME: () => resolver.forMailauth("fuzz.example.test", "CNAME"),
            PTR: () => resolver.ptr("192.0.2.1"),
          }[type];
          let values: unknown[];
          try {
            values = await withinTime(`resolver ${type}`, call, 3 * TIMEOUT_MS + 1000);
          } catch (error) {
            // forMailauth answers NODATA as dns.promises does, an Error with code ENODATA: mailauth tells it from ENOTFOUND.
            if (type === "CNAME" && (error as { code?: string }).code === "ENODATA") return;
            expect(error).toBeInstanceOf(DnsLookupError);
            return;
          }
          expect(Array.isArray(values)).toBe(true);
          for (const value of values) {
            if (type === "MX") expect(value).toEqual({ exchange: expect.any(String), priority: expect.any(Number) });
            else if (type === "CNAME") expect(typeof value === "string" || Array.isArray(value)).toBe(true);
            else expect(typeof value).toBe("string");
          }
        }),
        { ciRuns: 1_000 },
      );
    },
    testTimeout(),
  );

  test(
    "dns-packet decodes any bytes quickly, or throws an Error",
    async () => {
      const bytes = fc.oneof(
        fc.uint8Array({ maxLength: 1500 }).map((b) => Buffer.from(b)),
        // Compression pointers everywhere (RFC 1035 §4.1.4): loops and forward jumps.
        fc.array(fc.constantFrom(0xc0, 0x0c, 0x00, 0x01, 0x3f, 0xff, 0x03), { minLength: 12, maxLength: 600 }).map((b) => Buffer.from(b)),
      );
      await fuzz(
        "dns/decode",
        fc.asyncProperty(bytes, async (raw) => {
          await withinTime("dnsPacket.decode", () => {
            try {
              dnsPacket.decode(raw);
            } catch (error) {
              expect(error).toBeInstanceOf(Error);
            }
          }, 250);
        }),
      );
    },
    testTimeout(),
  );
});
