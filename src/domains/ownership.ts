/**
 * Proof that an organization controls a name's DNS, for taking over the claim another organization
 * holds on it. A claim is first come, first served, and its MX record names this server whoever
 * made it: without a way back, anyone could add a customer's domain before the customer does, keep
 * the name from them, and receive their mail once they point their MX here. Whoever can publish a
 * record at the name is its owner (as for the verification of a site or a workspace domain
 * elsewhere): a TXT record that names the organization and the claim it replaces moves the name.
 */
import type { Resolver } from "../dns/resolver";
import type { Store } from "../store";

const CLAIM_PREFIX = "inboxd-claim=";
/** 128 bits of the tag: what no one can guess or make without the server's key. */
const TOKEN_HEX_DIGITS = 32;

/**
 * The record that moves the claim `heldClaimId` on `name` to the organization. At the name itself,
 * beside its SPF record: a name of its own under it could pass DNS's 253 characters, where a
 * squatter's long name could then never be taken back. Its value is a tag, under the server's key,
 * of the organization and of the claim it replaces: it takes that claim only, so a record left
 * published cannot take the name back from a later holder (each holder's claim is a new one).
 */
export function claimRecord(store: Pick<Store, "tag">, organizationId: string, heldClaimId: string, name: string): { name: string; value: string } {
  const token = store.tag("domain claim", `${organizationId}\n${heldClaimId}`).slice(0, TOKEN_HEX_DIGITS);
  return { name, value: `${CLAIM_PREFIX}${token}` };
}

/** Whether the record is published now; a look-up that fails proves nothing. */
export async function publishesClaim(resolver: Resolver, record: { name: string; value: string }): Promise<boolean> {
  try {
    return (await resolver.txt(record.name)).some((value) => value.trim() === record.value);
  } catch {
    return false;
  }
}
