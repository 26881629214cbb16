/** DKIM at send time: every outgoing message is signed with the active keys of its From domain. */
import type { App } from "../app";
import { signMessage } from "../dkim/sign";
import { parseAddress } from "../mail/address";

/** The domain has nothing to sign with: the message cannot go out as the contract requires. */
export class NoSigningKeyError extends Error {
  override readonly name = "NoSigningKeyError";
}

/** The message with an RSA and an Ed25519 DKIM-Signature of d=<From domain> prepended (RFC 6376, RFC 8463). */
export async function signOutgoing(app: App, from: string, raw: Buffer): Promise<Buffer> {
  const domain = parseAddress(from)?.domain;
  if (!domain) throw new NoSigningKeyError(`the From address ${JSON.stringify(from)} has no domain to sign for`);
  const keys = app.store.dkimKeys.activeForDomain(domain);
  if (keys.length === 0) throw new NoSigningKeyError(`no active DKIM key for ${domain}`);
  return signMessage(raw, { domain, keys, signTime: app.clock.date() });
}
