// DKIM-signs an outgoing message with every key of its domain (RFC 6376 §5, RFC 8463).
//
// Written here on node:crypto rather than taken from mailauth's dkimSign (which inboxd used before,
// and still uses to verify), because signing is the largest cost of an outgoing message: in
// bench/outbound, dkimSign cost 1.17 ms of CPU per message for the RSA and Ed25519 signatures, this
// signer 0.72 ms, of which the RSA private-key operation itself is 0.58 ms. dkimSign reads both PEM
// keys again for every message (0.17 ms each) and streams the message through its parser; here the
// keys are read once, the body is canonicalized and hashed once for both signatures, and little is
// left besides the signatures. test/dkim/canonicalization.test.ts proves the result with two
// independent verifiers (mailauth and python3-dkim's dkimverify) over folded, repeated, 8-bit,
// empty-body and long-line messages and bare line breaks.
import { createHash, createPrivateKey, sign, type KeyObject } from "node:crypto";
import type { DkimAlgorithm, DkimKey } from "./keys";
import { relaxedBody, relaxedHeader, splitMessage, type HeaderField } from "./canonicalize";
import { opensslLoads, opensslRsaKey, type OpensslRsaKey } from "./openssl-rsa";

export type SigningKey = Pick<DkimKey, "selector" | "algorithm" | "privateKeyPem">;

export type SignOptions = {
  domain: string;
  keys: SigningKey[];
  /** The t= tag; the current time when left out. */
  signTime?: Date;
  /** Who makes RSA signatures: the system's OpenSSL 3 where it loads and proves itself (./openssl-rsa), else node:crypto ("auto", the default); or node:crypto always ("builtin"). */
  rsaEngine?: RsaEngine;
};

export type RsaEngine = "auto" | "builtin";

/** Who makes the RSA signatures of this thread under `engine`, for the log. */
export const rsaSignerName = (engine: RsaEngine) => (engine === "auto" && opensslLoads() ? "OpenSSL 3 (libcrypto.so.3)" : "node:crypto");

// RFC 6376 §5.4.1: the fields that carry the message's meaning; From is required (§5.4).
export const SIGNED_FIELD_NAMES = ["From", "To", "Cc", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type", "In-Reply-To", "References", "Reply-To"];
const SIGNED_HEADER_FIELDS = new Set(SIGNED_FIELD_NAMES.map((name) => name.toLowerCase()));

// RFC 6376 §3.5: d= and s= are domain names (s= its labels); nothing that could end a tag or the field.
const TAG_SAFE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
// RFC 8301 §3.2: signers MUST use RSA keys of at least 1024 bits.
const MIN_RSA_BITS = 1024;
// RFC 5322 §2.1.1: lines SHOULD stay within 78 characters.
const LINE_WIDTH = 78;

export class DkimSignError extends Error {
  override readonly name = "DkimSignError";
}

/** The message with one DKIM-Signature per key prepended, in the order of `keys`. */
export function signMessage(raw: Uint8Array, opts: SignOptions): Buffer {
  if (opts.keys.length === 0) throw new DkimSignError(`no DKIM key for ${opts.domain}`);
  const fail = (reason: string) => new DkimSignError(`DKIM signing for ${opts.domain} failed: ${reason}`);
  if (!TAG_SAFE_NAME.test(opts.domain)) throw fail(`${JSON.stringify(opts.domain)} cannot be a d= value`);
  const { fields, body } = splitMessage(raw);
  // RFC 6376 §5.4.2: each instance of a repeated field is signed, from the bottom up, as verifiers pick them.
  const signed = fields.filter((field) => SIGNED_HEADER_FIELDS.has(field.name.toLowerCase())).reverse();
  if (!signed.some((field) => field.name.toLowerCase() === "from")) throw fail("the message has no From field");
  const signedHeaders = signed.map((field) => relaxedHeader(field.unfolded) + "\r\n").join("");
  // RFC 6376 §3.7: the body hash, the same for both signatures (same canonicalization and hash).
  const bodyHash = createHash("sha256").update(relaxedBody(body), "latin1").digest("base64");
  const time = Math.floor((opts.signTime ?? new Date()).getTime() / 1000);

  const headers = opts.keys.map((key) => {
    if (!TAG_SAFE_NAME.test(key.selector)) throw fail(`${JSON.stringify(key.selector)} cannot be an s= value`);
    const privateKey = parsedKeyFor(key, fail);
    const tags = [`v=1`, `a=${key.algorithm}`, `c=relaxed/relaxed`, `d=${opts.domain}`, `s=${key.selector}`, `t=${time}`, hTag(signed), `bh=${bodyHash}`];
    const unsigned = foldTags("DKIM-Signature: ", tags) + ";\r\n\tb=";
    // RFC 6376 §3.7: the signed header fields, then this field with an empty b= and no trailing CRLF.
    const data = Buffer.from(signedHeaders + relaxedHeader(unsigned.replace(/\r\n/g, "")), "latin1");
    return unsigned + foldValue(signatureOf(key.algorithm, data, privateKey, opts.rsaEngine ?? "auto"), "\tb=".length) + "\r\n";
  });
  return Buffer.concat([Buffer.from(headers.join(""), "latin1"), raw]);
}

/** RFC 6376 §3.3.1 (rsa-sha256: RSASSA-PKCS1-v1_5 over SHA-256), RFC 8463 §3 (PureEd25519 over the SHA-256 of the data). */
function signatureOf(algorithm: DkimAlgorithm, data: Buffer, key: ParsedKey, engine: RsaEngine): string {
  if (algorithm === "ed25519-sha256") return sign(null, createHash("sha256").update(data).digest(), key.object).toString("base64");
  if (engine === "auto" && key.openssl === undefined) key.openssl = opensslRsaKey(key.object) ?? null;
  const signature = engine === "auto" && key.openssl ? key.openssl.sign(data) : sign("sha256", data, key.object);
  return signature.toString("base64");
}

/** A key read from its PEM, and the same key in OpenSSL once asked for (null: OpenSSL cannot sign with it). */
interface ParsedKey {
  object: KeyObject;
  openssl?: OpensslRsaKey | null;
}

// Parsed keys by PEM: reading a PEM costs a third of an RSA signature. A few domains' keys at once.
const parsedKeys = new Map<string, ParsedKey>();
const KEPT_KEYS = 256;

function parsedKeyFor(key: SigningKey, fail: (reason: string) => Error): ParsedKey {
  const parsed = parsedKeys.get(key.privateKeyPem) ?? parsedKey(key, fail);
  const expected = key.algorithm === "rsa-sha256" ? "rsa" : "ed25519";
  if (parsed.object.asymmetricKeyType !== expected) throw fail(`${key.selector}: an ${parsed.object.asymmetricKeyType} key cannot make ${key.algorithm} signatures`);
  const bits = parsed.object.asymmetricKeyDetails?.modulusLength ?? 0;
  if (expected === "rsa" && bits < MIN_RSA_BITS) throw fail(`${key.selector}: RSA key of ${bits} bits, at least ${MIN_RSA_BITS} required`);
  return parsed;
}

function parsedKey(key: SigningKey, fail: (reason: string) => Error): ParsedKey {
  let object: KeyObject;
  try {
    object = createPrivateKey(key.privateKeyPem);
  } catch (error) {
    throw fail(`${key.selector}: the private key cannot be read (${(error as Error).message})`);
  }
  if (parsedKeys.size >= KEPT_KEYS) parsedKeys.delete(parsedKeys.keys().next().value!);
  const parsed = { object };
  parsedKeys.set(key.privateKeyPem, parsed);
  return parsed;
}

/**
 * The h= tag (RFC 6376 §3.5): the fields signed, names as they appear in the message; then each
 * signed name once more, for the instance the message does not have (§5.4.2: it is hashed as
 * nothing), so that a field a relay adds (a Reply-To, a second Subject above ours) breaks the
 * signature rather than ride on it (§8.15, oversigning).
 */
const hTag = (signed: HeaderField[]) => `h=${[...signed.map((field) => field.name), ...SIGNED_FIELD_NAMES].join(":")}`;

/** "Name: tag; tag; ..." folded before a tag, or after a colon of h=, that would pass the line width (FWS, RFC 6376 §3.2). */
function foldTags(start: string, tags: string[]): string {
  let out = start;
  let column = start.length;
  tags.forEach((tag, index) => {
    const pieces = tag.split(/(?<=:)/); // h= may fold after any colon; other tags hold none
    pieces.forEach((piece, pieceIndex) => {
      const separator = pieceIndex > 0 ? "" : index > 0 ? "; " : "";
      if (column + separator.length + piece.length + 1 > LINE_WIDTH && column > 1) {
        out += separator.trimEnd() + "\r\n\t" + piece;
        column = 1 + piece.length;
      } else {
        out += separator + piece;
        column += separator.length + piece.length;
      }
    });
  });
  return out;
}

/** A base64 value continued over lines of the line width, starting at `column` (FWS inside base64, RFC 6376 §3.5 sig-b-tag). */
function foldValue(value: string, column: number): string {
  const first = LINE_WIDTH - column;
  const lines = [value.slice(0, first)];
  for (let offset = first; offset < value.length; offset += LINE_WIDTH - 1) lines.push(value.slice(offset, offset + LINE_WIDTH - 1));
  return lines.join("\r\n\t");
}
