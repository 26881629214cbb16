/** DKIM at send time: every outgoing message is signed with the active keys of its From domain. */
import type { App } from "../app";
import { parseAddress } from "../mail/address";
import type { DkimKeyRecord } from "../store";
import type { Signer } from "./sign-pool";

/** The domain has nothing to sign with: the message cannot go out as the contract requires. */
export class NoSigningKeyError extends Error {
  override readonly name = "NoSigningKeyError";
}

/**
 * The active keys of each From domain, checked for every message (a rotation takes effect at once)
 * by their ids alone, read in full only when they changed, and handed out as the same array while
 * they stay the same, so the signing threads receive each key set once (sign-pool.ts).
 */
export class SigningKeys {
  private readonly current = new Map<string, { ids: string; keys: DkimKeyRecord[] }>();

  constructor(private readonly app: App) {}

  async forDomain(domain: string): Promise<DkimKeyRecord[]> {
    const { dkimKeys } = this.app.store;
    const ids = (await dkimKeys.activeIdsForDomain(domain)).join(",");
    const known = this.current.get(domain);
    if (known?.ids === ids) return known.keys;
    const keys = await dkimKeys.activeForDomain(domain);
    const readIds = keys.map((key) => key.id).toSorted().join(",");
    // Another message may have read the same set meanwhile: hand out its array, so the set stays one object.
    const latest = this.current.get(domain);
    if (latest?.ids === readIds) return latest.keys;
    this.current.set(domain, { ids: readIds, keys });
    return keys;
  }
}

/** The message with an RSA and an Ed25519 DKIM-Signature of d=<From domain> prepended (RFC 6376, RFC 8463). */
export async function signOutgoing(keys: SigningKeys, signer: Signer, from: string, raw: Uint8Array, signTime: Date): Promise<Buffer> {
  const domain = parseAddress(from)?.domain;
  if (!domain) throw new NoSigningKeyError(`the From address ${JSON.stringify(from)} has no domain to sign for`);
  const active = await keys.forDomain(domain);
  if (active.length === 0) throw new NoSigningKeyError(`no active DKIM key for ${domain}`);
  return signer.sign(raw, { domain, keys: active, signTime });
}
