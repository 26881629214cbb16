/**
 * The records the store keeps, as services read and write them: plain values, whatever engine
 * holds them. Times are milliseconds since the epoch (the HTTP layer renders ISO 8601). Each
 * engine maps its tables onto these shapes; the compiler checks the embedded one's rows against
 * them where sqlite/index.ts offers its aggregates as the Store.
 */
import type { DkimAlgorithm, DkimKeyStatus } from "../dkim/keys";
import type { DomainStatus, RecordCheck } from "../domains/status";
import type { EventName } from "../events/names";
import type { SuppressionReason } from "../outbound/policy";
import type { Authentication } from "../smtp/authenticate";
import type { WebhookDeliveryStatus } from "../webhooks/policy";

interface Timestamps {
  createdAt: number;
  updatedAt: number;
}

export interface UserRecord extends Timestamps {
  id: string;
  /** Matched case-insensitively. */
  email: string;
  firstName: string;
  lastName: string;
  passwordHash: string;
}

export interface OrganizationRecord extends Timestamps {
  id: string;
  name: string;
}

export interface MembershipRecord {
  userId: string;
  organizationId: string;
  role: string;
  createdAt: number;
}

export interface AccessTokenRecord {
  tokenHash: string;
  userId: string;
  expiresAt: number;
  createdAt: number;
}

export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  name: string;
  prefix: string;
  keyHash: string;
  createdAt: number;
  lastUsedAt: number | null;
}

export interface LoginThrottleRecord {
  subject: string;
  windowStart: number;
  attempts: number;
  lockedUntil: number | null;
  expiresAt: number;
}

export interface InboxRecord extends Timestamps {
  id: string;
  organizationId: string;
  name: string | null;
  /** Matched case-insensitively. */
  email: string;
}

export interface ThreadRecord extends Timestamps {
  id: string;
  organizationId: string;
  inboxId: string;
  subject: string;
  messageCount: number;
  lastMessageAt: number;
}

export interface MessageRecord extends Timestamps {
  id: string;
  organizationId: string;
  inboxId: string;
  threadId: string;
  fromInboxId: string | null;
  toInboxId: string | null;
  from: string;
  /** The display name beside `from` (a received From field's, a sent message's inbox name); null when none. */
  fromName: string | null;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  text: string | null;
  html: string | null;
  labels: string[];
  status: string;
  messageIdHeader: string | null;
  inReplyTo: string | null;
  references: string[];
  authentication: Authentication | null;
  externalMessageId: string | null;
}

/** The fields the message list shows (the description's subset). */
export type MessageSummaryRecord = Pick<MessageRecord, "id" | "organizationId" | "inboxId" | "threadId" | "from" | "to" | "subject" | "text" | "html" | "status" | "createdAt">;

export interface AttachmentRecord {
  id: string;
  messageId: string;
  position: number;
  name: string | null;
  contentType: string | null;
  contentId: string | null;
  inline: boolean;
  content: Buffer;
  /** Set when the content was staged as a large value (Store.blobs); `content` is then read back whole. */
  blobId: string | null;
}

/** An outbound delivery: one recipient of one sent message. */
export interface DeliveryRecord extends Timestamps {
  id: string;
  organizationId: string;
  messageId: string;
  recipient: string;
  domain: string;
  status: string;
  attempts: number;
  lastResponse: string | null;
  nextAttemptAt: number | null;
}

export interface DomainRecord extends Timestamps {
  id: string;
  organizationId: string;
  name: string;
  status: DomainStatus;
  receiving: boolean;
  sending: boolean;
  /** The last look-up of each record, keyed by `<type> <name>`. */
  recordChecks: Record<string, RecordCheck>;
  verifiedAt: number | null;
  recordsChangedAt: number;
  checkedAt: number | null;
  nextCheckAt: number;
}

export interface DkimKeyRecord extends Timestamps {
  id: string;
  domain: string;
  organizationId: string | null;
  selector: string;
  algorithm: DkimAlgorithm;
  /** In the clear as services see it; the store seals it at rest. */
  privateKeyPem: string;
  publicKeyBase64: string;
  status: DkimKeyStatus;
}

export interface SuppressionRecord extends Timestamps {
  id: string;
  organizationId: string;
  address: string;
  reason: SuppressionReason;
  detail: string | null;
  messageId: string | null;
}

export interface WebhookRecord extends Timestamps {
  id: string;
  organizationId: string;
  url: string;
  events: EventName[];
  /** In the clear as services see it; the store seals it at rest. */
  secret: string;
  enabled: boolean;
  disabledReason: string | null;
  firstFailureAt: number | null;
}

export interface WebhookDeliveryRecord extends Timestamps {
  id: number;
  webhookId: string;
  eventId: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
}

export interface WebhookAttemptRecord {
  id: string;
  webhookId: string;
  deliveryId: number;
  event: string;
  url: string;
  attemptNumber: number;
  statusCode: number | null;
  response: string | null;
  success: boolean;
  error: string | null;
  finishedAt: number | null;
  createdAt: number;
}

export interface EventRecord {
  id: string;
  organizationId: string;
  type: string;
  inboxId: string | null;
  messageId: string | null;
  payload: string;
  createdAt: number;
}
