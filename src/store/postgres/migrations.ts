/** The PostgreSQL engine's numbered SQL migrations, embedded in the executable as text. Append new files here in order. */
import mail from "../../../migrations/postgres/0001_mail.sql" with { type: "text" };
import delivery from "../../../migrations/postgres/0002_delivery.sql" with { type: "text" };
import blobGoneLock from "../../../migrations/postgres/0003_blob_gone_lock.sql" with { type: "text" };
import messageReplyTo from "../../../migrations/postgres/0004_message_reply_to.sql" with { type: "text" };
import tlsReportKey from "../../../migrations/postgres/0005_tls_report_key.sql" with { type: "text" };
import acceptedInboundPeer from "../../../migrations/postgres/0006_accepted_inbound_peer.sql" with { type: "text" };
import receivedDigest from "../../../migrations/postgres/0007_received_digest.sql" with { type: "text" };
import idempotencyLease from "../../../migrations/postgres/0008_idempotency_lease.sql" with { type: "text" };
import tlsReportDigest from "../../../migrations/postgres/0009_tls_report_digest.sql" with { type: "text" };
import nodes from "../../../migrations/postgres/0010_nodes.sql" with { type: "text" };
import loginPreviousWindow from "../../../migrations/postgres/0011_login_previous_window.sql" with { type: "text" };
import idempotencyKeyInbox from "../../../migrations/postgres/0012_idempotency_key_inbox.sql" with { type: "text" };

export const migrations: { version: string; sql: string }[] = [
  { version: "0001_mail", sql: mail },
  { version: "0002_delivery", sql: delivery },
  { version: "0003_blob_gone_lock", sql: blobGoneLock },
  { version: "0004_message_reply_to", sql: messageReplyTo },
  { version: "0005_tls_report_key", sql: tlsReportKey },
  { version: "0006_accepted_inbound_peer", sql: acceptedInboundPeer },
  { version: "0007_received_digest", sql: receivedDigest },
  { version: "0008_idempotency_lease", sql: idempotencyLease },
  { version: "0009_tls_report_digest", sql: tlsReportDigest },
  { version: "0010_nodes", sql: nodes },
  { version: "0011_login_previous_window", sql: loginPreviousWindow },
  { version: "0012_idempotency_key_inbox", sql: idempotencyKeyInbox },
];
