/**
 * Proof that an organization controls a name's DNS, for taking over a claim another organization
 * holds. A claim is first come, first served, and its MX record names this server whoever made
 * it: without a way back, anyone could add a customer's domain before the customer does, keep
 * the name from them, and receive their mail once they point their MX here. Whoever can publish
 * a record under the name is its owner (as for the verification of a site or a workspace domain
 * elsewhere): a TXT record that names the organization moves the claim to it.
 */
import { createHash } from "node:crypto";
import type { Resolver } from "../dns/resolver";

const CLAIM_PREFIX = "inboxd-claim=";

/**
 * The record that moves `name` to the organization: at a name of its own (the domain's apex
 * holds SPF already), with a value only this organization's claim uses. Not secret: only the
 * name's owner can publish it.
 */
export function claimRecord(organizationId: string, name: string): { name: string; value: string } {
  const token = createHash("sha256").update(`${organizationId}\n${name}`).digest("base64url").slice(0, 32);
  return { name: `_inboxd-claim.${name}`, value: `${CLAIM_PREFIX}${token}` };
}

/** Whether the claim record for the organization is published now; a look-up that fails proves nothing. */
export async function publishesClaim(resolver: Resolver, organizationId: string, name: string): Promise<boolean> {
  const expected = claimRecord(organizationId, name);
  try {
    return (await resolver.txt(expected.name)).some((value) => value.trim() === expected.value);
  } catch {
    return false;
  }
}
