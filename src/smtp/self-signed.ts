// Self-signed X.509 certificates, made at run time for STARTTLS when the
// operator supplies none. node:crypto makes keys and signs but cannot build a
// certificate, and the openssl CLI is not on every machine, so this writes the
// few DER structures of RFC 5280 itself: no dependency, no child process.
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import ipaddr from "ipaddr.js";

export type PemCertificate = { cert: string; key: string };

const DAY_MS = 86_400_000;

// RSA rather than ECDSA: some SMTP peers still in service negotiate RSA only.
export function selfSignedCert(hostname: string, now: Date = new Date(), validDays = 3650): PemCertificate {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const name = seq(set(seq(oid("2.5.4.3"), utf8(hostname))));
  const sha256WithRsa = seq(oid("1.2.840.113549.1.1.11"), der(0x05, Buffer.alloc(0)));
  const tbs = seq(
    der(0xa0, integer(Buffer.from([2]))), // [0] EXPLICIT version: v3
    integer(positiveSerial()),
    sha256WithRsa,
    name,
    // Backdated an hour so a peer whose clock runs a little behind accepts it.
    seq(time(new Date(now.getTime() - 3_600_000)), time(new Date(now.getTime() + validDays * DAY_MS))),
    name,
    spki,
    der(0xa3, seq(...extensions(hostname, spki))),
  );
  const signature = sign("sha256", tbs, privateKey);
  const certificate = seq(tbs, sha256WithRsa, der(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return {
    cert: pem("CERTIFICATE", certificate),
    key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

// The extensions `openssl req -x509` adds, so that the certificate can serve
// both as a server certificate and as its own trust anchor (tests pass it as `ca`).
function extensions(hostname: string, spki: Buffer): Buffer[] {
  const keyId = createHash("sha1").update(spki).digest();
  return [
    extension("2.5.29.17", seq(subjectAltName(hostname))),
    extension("2.5.29.14", der(0x04, keyId)), // subjectKeyIdentifier
    extension("2.5.29.35", seq(der(0x80, keyId))), // authorityKeyIdentifier
    extension("2.5.29.19", seq(der(0x01, Buffer.from([0xff]))), true), // basicConstraints cA=TRUE
  ];
}

// RFC 5280 4.2.1.6: clients match IP literals against iPAddress, names against dNSName.
function subjectAltName(hostname: string): Buffer {
  if (ipaddr.IPv4.isValidFourPartDecimal(hostname) || ipaddr.IPv6.isValid(hostname)) {
    return der(0x87, Buffer.from(ipaddr.parse(hostname).toByteArray()));
  }
  return der(0x82, Buffer.from(hostname, "ascii"));
}

function extension(id: string, value: Buffer, critical = false): Buffer {
  const flag = critical ? [der(0x01, Buffer.from([0xff]))] : [];
  return seq(oid(id), ...flag, der(0x04, value));
}

// RFC 5280 4.1.2.2: a positive integer of at most 20 octets.
function positiveSerial(): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x01;
  return serial;
}

// RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050 on.
function time(date: Date): Buffer {
  const digits = date.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  return date.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(digits.slice(2))) : der(0x18, Buffer.from(digits));
}

function der(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function seq(...items: Buffer[]): Buffer {
  return der(0x30, Buffer.concat(items));
}

function set(...items: Buffer[]): Buffer {
  return der(0x31, Buffer.concat(items));
}

function integer(unsignedBigEndian: Buffer): Buffer {
  return der(0x02, unsignedBigEndian);
}

function utf8(text: string): Buffer {
  return der(0x0c, Buffer.from(text, "utf8"));
}

// X.690 8.19: first two arcs share one byte, the rest are base-128 with continuation bits.
function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split(".").map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const groups = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) groups.unshift((value & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return der(0x06, Buffer.from(bytes));
}

function pem(label: string, body: Buffer): string {
  const lines = body.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
