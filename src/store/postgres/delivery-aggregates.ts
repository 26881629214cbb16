/**
 * The aggregates of what leaves the node (migrations/postgres/0002_delivery.sql): outbound
 * deliveries, suppressions, DKIM keys, domains, webhooks and their queue, certificates, MTA-STS
 * policies, TLS reports and the accepted-inbound queue, on `db` as ./index.ts builds them.
 */
import type { Aggregates } from "../store";
import { acceptedInboundStore } from "./accepted-inbound";
import { certificatesStore } from "./certificates";
import type { PgDb } from "./db";
import { deliveriesStore } from "./deliveries";
import { dkimKeysStore } from "./dkim-keys";
import { domainsStore } from "./domains";
import type { AggregateContext } from "./index";
import { mtaStsPoliciesStore } from "./mta-sts-policies";
import { suppressionsStore } from "./suppressions";
import { tlsReportsStore } from "./tls-reports";
import { webhookQueueStore } from "./webhook-queue";
import { webhooksStore } from "./webhooks";

type DeliveryAggregates = Pick<Aggregates, "deliveries" | "suppressions" | "dkimKeys" | "domains" | "webhooks" | "webhookQueue" | "certificates" | "mtaStsPolicies" | "tlsReports" | "acceptedInbound">;

export function deliveryAggregatesOn(db: PgDb, { secrets, blobs, leases }: AggregateContext): DeliveryAggregates {
  return {
    deliveries: deliveriesStore(db, blobs, leases),
    suppressions: suppressionsStore(db),
    dkimKeys: dkimKeysStore(db, secrets),
    domains: domainsStore(db),
    webhooks: webhooksStore(db, secrets, blobs),
    webhookQueue: webhookQueueStore(db, secrets, blobs, leases),
    certificates: certificatesStore(db, secrets),
    mtaStsPolicies: mtaStsPoliciesStore(db),
    tlsReports: tlsReportsStore(db),
    acceptedInbound: acceptedInboundStore(db, blobs, leases),
  };
}
