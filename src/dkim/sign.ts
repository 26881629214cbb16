// DKIM-signs an outgoing message with every key of its domain (RFC 6376 §5, RFC 8463).
import { dkimSign, type DKIMSignOptions } from "mailauth";
import type { DkimKey } from "./keys";

export type SigningKey = Pick<DkimKey, "selector" | "algorithm" | "privateKeyPem">;

export type SignOptions = {
  domain: string;
  keys: SigningKey[];
  /** The t= tag; the current time when left out. */
  signTime?: Date;
};

// RFC 6376 §5.4.1: the fields that carry the message's meaning; From is required (§5.4).
const SIGNED_HEADER_FIELDS = [
  "From",
  "To",
  "Cc",
  "Subject",
  "Date",
  "Message-ID",
  "MIME-Version",
  "Content-Type",
  "In-Reply-To",
  "References",
  "Reply-To",
];

export class DkimSignError extends Error {
  override readonly name = "DkimSignError";
}

/** The message with one DKIM-Signature per key prepended, in the order of `keys`. */
export async function signMessage(raw: Buffer, opts: SignOptions): Promise<Buffer> {
  if (opts.keys.length === 0) throw new DkimSignError(`no DKIM key for ${opts.domain}`);
  // With signatureData mailauth reads the domain, selector and key of each entry only (its README,
  // "signatureData"); its DKIMSignOptions type still demands them at the top level.
  const options = {
    canonicalization: "relaxed/relaxed", // RFC 6376 §3.4: survives the re-folding and whitespace changes relays make
    headerList: SIGNED_HEADER_FIELDS,
    signTime: opts.signTime,
    strict: true,
    signatureData: opts.keys.map((key) => ({
      signingDomain: opts.domain,
      selector: key.selector,
      privateKey: key.privateKeyPem,
      algorithm: key.algorithm,
    })),
  } as DKIMSignOptions;
  const result = await dkimSign(raw, options);
  if (result.errors.length > 0) {
    const reasons = result.errors.map((error) => `${error.selector ?? "?"}: ${error.err.message}`).join("; ");
    throw new DkimSignError(`DKIM signing for ${opts.domain} failed: ${reasons}`);
  }
  return Buffer.concat([Buffer.from(result.signatures), raw]);
}
