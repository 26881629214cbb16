/**
 * The aggregates of what leaves the node (migrations/postgres/0002_delivery.sql): outbound
 * deliveries, suppressions, DKIM keys, domains, webhooks and their queue, certificates, MTA-STS
 * policies, TLS reports and the accepted-inbound queue: how ./index.ts builds each on a connection.
 */
import type { Aggregates } from "../store";
import { acceptedInboundStore } from "./accepted-inbound";
import { certificatesStore } from "./certificates";
import { deliveriesStore } from "./deliveries";
import { dkimKeysStore } from "./dkim-keys";
import { domainsStore } from "./domains";
import type { AggregateBuilders } from "./index";
import { mtaStsPoliciesStore } from "./mta-sts-policies";
import { suppressionsStore } from "./suppressions";
import { tlsReportsStore } from "./tls-reports";
import { webhookQueueStore } from "./webhook-queue";
import { webhooksStore } from "./webhooks";

type DeliveryAggregates = Pick<Aggregates, "deliveries" | "suppressions" | "dkimKeys" | "domains" | "webhooks" | "webhookQueue" | "certificates" | "mtaStsPolicies" | "tlsReports" | "acceptedInbound">;

export const deliveryAggregateBuilders: AggregateBuilders<DeliveryAggregates> = {
  deliveries: (db, { blobs, leases }) => deliveriesStore(db, blobs, leases),
  suppressions: (db) => suppressionsStore(db),
  dkimKeys: (db, { secrets }) => dkimKeysStore(db, secrets),
  domains: (db, { inTransaction }) => domainsStore(db, inTransaction),
  webhooks: (db, { secrets, blobs, inTransaction }) => webhooksStore(db, secrets, blobs, inTransaction),
  webhookQueue: (db, { secrets, blobs, leases }) => webhookQueueStore(db, secrets, blobs, leases),
  certificates: (db, { secrets }) => certificatesStore(db, secrets),
  mtaStsPolicies: (db) => mtaStsPoliciesStore(db),
  tlsReports: (db) => tlsReportsStore(db),
  acceptedInbound: (db, { blobs, leases }) => acceptedInboundStore(db, blobs, leases),
};
