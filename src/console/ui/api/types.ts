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
}

export type MessageStatus = "sent" | "received" | "delivered" | "bounced" | "complained" | "rejected";

export interface MessageSummary {
  id: string;
  inboxId: string;
  threadId: string;
  from: string;
  to: string[];
  subject: string;
  text?: string;
  status: MessageStatus;
  createdAt: string;
}

export interface Message extends MessageSummary {
  /** The sender's display name beside `from`, when it has one. */
  fromName?: string;
  fromInboxId?: string;
  toInboxId?: string;
  cc: string[];
  bcc: string[];
  html?: string;
  labels: string[];
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

export interface Suppression {
  id: string;
  address: string;
  reason: string;
  detail?: string;
  messageId?: string;
  createdAt: string;
}

/** The nine event names webhooks subscribe to: the server's own list, which imports nothing. */
export { eventNames } from "../../../events/names";
