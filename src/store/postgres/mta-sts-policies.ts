/** Recipient domains' MTA-STS policies (RFC 8461 §3.3), cached for their max_age; as ../sqlite/mta-sts-policies.ts. */
import { eq } from "drizzle-orm";
import type { MtaStsPolicyRecord } from "../records";
import type { MtaStsPoliciesStore } from "../store";
import type { PgDb } from "./db";
import { mtaStsPolicies } from "./schema/index";

export function mtaStsPoliciesStore(db: PgDb): MtaStsPoliciesStore {
  return {
    async find(domain: string): Promise<MtaStsPolicyRecord | undefined> {
      const [row] = await db.select().from(mtaStsPolicies).where(eq(mtaStsPolicies.domain, domain));
      return row;
    },
    async save(policy: MtaStsPolicyRecord): Promise<void> {
      const { domain: _domain, ...rest } = policy;
      await db.insert(mtaStsPolicies).values(policy).onConflictDoUpdate({ target: mtaStsPolicies.domain, set: rest });
    },
  };
}
