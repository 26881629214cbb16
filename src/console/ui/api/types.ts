/**
 * The JSON the console reads from the public HTTP API (README "API", docs/api.md): only the fields
 * it shows. Optional fields are left out of the JSON when they have no value.
 */
import type { Attachment, Delivery } from "../../../messages/shapes";

export type { Attachment, Delivery };

export interface User {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  organizations: string[];
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt?: string;
}

/** Only on creation: the secret itself. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

export interface Inbox {
  id: string;
  name?: string;
  email: string;
  createdAt: string;
  /** On the inbox list and get only. */
  messageCount?: number;
  unreadCount?: number;
}

export type MessageStatus = "sent" | "received" | "delivered" | "bounced" | "complained" | "rejected";

export interface MessageSummary {
  id: string;
  inboxId: string;
  threadId: string;
  from: string;
  /** The sender's display name beside `from`, when it has one. */
  fromName?: string;
  to: string[];
  subject: string;
  text?: string;
  labels: string[];
  read: boolean;
  status: MessageStatus;
  createdAt: string;
}

export interface Message extends MessageSummary {
  fromInboxId?: string;
  toInboxId?: string;
  cc: string[];
  bcc: string[];
  html?: string;
  attachments: Attachment[];
  externalMessageId?: string;
  authentication?: { spf: string; dkim: string; dmarc: string; arc?: string };
  deliveries: Delivery[];
  updatedAt: string;
}

export interface Thread {
  id: string;
  inboxId: string;
  subject: string;
  /** The sender of its newest message. */
  from: string;
  fromName?: string;
  /** The start of its newest message's text, on one line. */
  preview?: string;
  labels: string[];
  unreadCount: number;
  attachmentCount: number;
  messageCount: number;
  lastMessageAt: string;
  createdAt: string;
}

export interface ThreadWithMessages extends Thread {
  messages: Message[];
}

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  enabled?: boolean;
  disabledReason?: string;
  createdAt: string;
}

export interface CreatedWebhook extends Webhook {
  secret: string;
}

export interface WebhookAttempt {
  id: string;
  event: string;
  url: string;
  statusCode?: number;
  response?: string;
  success: boolean;
  error?: string;
  attemptNumber: number;
  createdAt: string;
}

export type CheckStatus = "pending" | "verified" | "failed";

export interface DomainRecord {
  type: string;
  name: string;
  value: string;
  priority?: number;
  purpose: "receiving" | "sending";
  status: CheckStatus;
  reason?: string;
}

export interface Domain {
  id: string;
  name: string;
  status: CheckStatus;
  verified: boolean;
  receiving: boolean;
  sending: boolean;
  records: DomainRecord[];
  verifiedAt?: string;
  createdAt: string;
}

/** One remote recipient's delivery, with its message (`GET /v1/deliveries`). */
export interface OutboundDelivery extends Delivery {
  id: string;
  messageId: string;
  inboxId: string;
  threadId: string;
  subject: string;
  from: string;
  fromName?: string;
  domain: string;
  createdAt: string;
}

export interface Suppression {
  id: string;
  address: string;
  reason: string;
  detail?: string;
  messageId?: string;
  createdAt: string;
}

export interface AccessRule {
  id: string;
  /** Absent: every inbox of the organization. */
  inboxId?: string;
  direction: "receive" | "send";
  action: "allow" | "block";
  value: string;
  kind: "address" | "domain";
  createdAt: string;
}

/** The nine event names webhooks subscribe to: the server's own list, which imports nothing. */
export { eventNames } from "../../../events/names";
