/** Recipient domains' MTA-STS policies (RFC 8461 §3.3), cached for their max_age. */
import { eq } from "drizzle-orm";
import type { MtaStsPolicyRecord } from "../records";
import type { Db } from "./db";
import { mtaStsPolicies } from "./schema/index";

export const mtaStsPoliciesStore = (db: Db) => ({
  find(domain: string): MtaStsPolicyRecord | undefined {
    return db.select().from(mtaStsPolicies).where(eq(mtaStsPolicies.domain, domain)).get();
  },
  save(policy: MtaStsPolicyRecord) {
    const { domain, ...rest } = policy;
    db.insert(mtaStsPolicies).values(policy).onConflictDoUpdate({ target: mtaStsPolicies.domain, set: rest }).run();
  },
});
