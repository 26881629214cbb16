/** The numbered SQL migrations, embedded in the executable as text. Append new files here in order. */
import core from "../../../migrations/0001_core.sql" with { type: "text" };
import dkimKeys from "../../../migrations/0020_dkim_keys.sql" with { type: "text" };
import loginThrottles from "../../../migrations/0030_login_throttles.sql" with { type: "text" };
import messageSearch from "../../../migrations/0040_message_search.sql" with { type: "text" };
import messageSearchBatched from "../../../migrations/0050_message_search_batched.sql" with { type: "text" };
import outbound from "../../../migrations/0060_outbound.sql" with { type: "text" };
import webhooks from "../../../migrations/0070_webhooks.sql" with { type: "text" };
import domains from "../../../migrations/0080_domains.sql" with { type: "text" };
import secretBox from "../../../migrations/0090_secret_box.sql" with { type: "text" };
import blobChunks from "../../../migrations/0100_blob_chunks.sql" with { type: "text" };
import webhookFanOutInCode from "../../../migrations/0110_webhook_fan_out_in_code.sql" with { type: "text" };
import messageFromName from "../../../migrations/0120_message_from_name.sql" with { type: "text" };
import drafts from "../../../migrations/0130_drafts.sql" with { type: "text" };
import idempotencyKeys from "../../../migrations/0140_idempotency_keys.sql" with { type: "text" };
import labels from "../../../migrations/0150_labels.sql" with { type: "text" };
import accessLists from "../../../migrations/0160_access_lists.sql" with { type: "text" };
import eventStream from "../../../migrations/0170_event_stream.sql" with { type: "text" };
import certificates from "../../../migrations/0180_certificates.sql" with { type: "text" };
import tlsReports from "../../../migrations/0181_tls_reports.sql" with { type: "text" };
import acceptedInbound from "../../../migrations/0190_accepted_inbound.sql" with { type: "text" };
import messageRead from "../../../migrations/0200_message_read.sql" with { type: "text" };
import organizationDeliveries from "../../../migrations/0201_organization_deliveries.sql" with { type: "text" };
import messageReplyTo from "../../../migrations/0210_message_reply_to.sql" with { type: "text" };
import tlsReportKey from "../../../migrations/0211_tls_report_key.sql" with { type: "text" };
import acceptedInboundPeer from "../../../migrations/0220_accepted_inbound_peer.sql" with { type: "text" };
import receivedDigest from "../../../migrations/0230_received_digest.sql" with { type: "text" };
import tlsReportDigest from "../../../migrations/0240_tls_report_digest.sql" with { type: "text" };
import searchTextCap from "../../../migrations/0250_search_text_cap.sql" with { type: "text" };
import loginPreviousWindow from "../../../migrations/0260_login_previous_window.sql" with { type: "text" };
import idempotencyKeyInbox from "../../../migrations/0270_idempotency_key_inbox.sql" with { type: "text" };

export const migrations: { version: string; sql: string }[] = [
  { version: "0001_core", sql: core },
  { version: "0020_dkim_keys", sql: dkimKeys },
  { version: "0030_login_throttles", sql: loginThrottles },
  { version: "0040_message_search", sql: messageSearch },
  { version: "0050_message_search_batched", sql: messageSearchBatched },
  { version: "0060_outbound", sql: outbound },
  { version: "0070_webhooks", sql: webhooks },
  { version: "0080_domains", sql: domains },
  { version: "0090_secret_box", sql: secretBox },
  { version: "0100_blob_chunks", sql: blobChunks },
  { version: "0110_webhook_fan_out_in_code", sql: webhookFanOutInCode },
  { version: "0120_message_from_name", sql: messageFromName },
  { version: "0130_drafts", sql: drafts },
  { version: "0140_idempotency_keys", sql: idempotencyKeys },
  { version: "0150_labels", sql: labels },
  { version: "0160_access_lists", sql: accessLists },
  { version: "0170_event_stream", sql: eventStream },
  { version: "0180_certificates", sql: certificates },
  { version: "0181_tls_reports", sql: tlsReports },
  { version: "0190_accepted_inbound", sql: acceptedInbound },
  { version: "0200_message_read", sql: messageRead },
  { version: "0201_organization_deliveries", sql: organizationDeliveries },
  { version: "0210_message_reply_to", sql: messageReplyTo },
  { version: "0211_tls_report_key", sql: tlsReportKey },
  { version: "0220_accepted_inbound_peer", sql: acceptedInboundPeer },
  { version: "0230_received_digest", sql: receivedDigest },
  { version: "0240_tls_report_digest", sql: tlsReportDigest },
  { version: "0250_search_text_cap", sql: searchTextCap },
  { version: "0260_login_previous_window", sql: loginPreviousWindow },
  { version: "0270_idempotency_key_inbox", sql: idempotencyKeyInbox },
];
