/**
 * The records the store keeps, as services read and write them: plain values, whatever engine
 * holds them. Times are milliseconds since the epoch (the HTTP layer renders ISO 8601). Each
 * engine maps its tables onto these shapes; the compiler checks the embedded one's rows against
 * them where sqlite/index.ts offers its aggregates as the Store.
 */
import type { AccessAction, AccessDirection } from "../access/rules";
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
  /** Attempts in the window from windowStart, and in the window before it. */
  attempts: number;
  previousAttempts: number;
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
  /** A received message's Reply-To addresses (where its author asks replies to go); [] when none, and for sent mail. */
  replyTo: string[];
  subject: string;
  text: string | null;
  html: string | null;
  labels: string[];
  /** Received mail starts unread, sent mail read (migration 0200). */
  read: boolean;
  status: string;
  messageIdHeader: string | null;
  /**
   * A received message's envelope sender, subject and body, digested (SHA-256): what tells a
   * resend after a lost 250 from another message with the same Message-ID. Null for sent mail, a
   * message stored unanalysed, and messages stored before migration 0230; a copy from another
   * inbox of this server has a marker that no digest equals (messages/receive LOCAL_COPY_DIGEST).
   */
  receivedDigest: string | null;
  inReplyTo: string | null;
  references: string[];
  authentication: Authentication | null;
  externalMessageId: string | null;
}

/** The fields the message list shows (the description's subset). */
export type MessageSummaryRecord = Pick<
  MessageRecord,
  "id" | "organizationId" | "inboxId" | "threadId" | "from" | "fromName" | "to" | "subject" | "text" | "html" | "labels" | "read" | "status" | "createdAt"
>;

/**
 * Characters of a thread's newest text its overview reads: a preview is 200 of them once white
 * space is folded, so the text read must hold more than 200 (a text that starts with 250 blank
 * lines had no preview); a text whose first 2,000 are all white space has none.
 */
export const PREVIEW_SOURCE_CHARS = 2_000;

/** A thread as a mail list shows it: its newest message's sender and text, its labels and unread messages. */
export interface ThreadOverviewRecord {
  threadId: string;
  from: string;
  fromName: string | null;
  /** The newest message's first PREVIEW_SOURCE_CHARS characters of text, its preview made from them. */
  preview: string | null;
  /** Every label of its messages, once each. */
  labels: string[];
  unreadCount: number;
  attachmentCount: number;
}

/** A delivery with what the outbound queue shows of its message. */
export interface OutboundDeliveryRecord extends DeliveryRecord {
  inboxId: string;
  threadId: string;
  subject: string;
  from: string;
  fromName: string | null;
}

/** An inbox's message and unread totals. */
export interface InboxCountsRecord {
  inboxId: string;
  messageCount: number;
  unreadCount: number;
}

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

/** An attachment as a read without content lists it: its size in place of its bytes, which stay unread. */
export type ListedAttachmentRecord = Omit<AttachmentRecord, "content" | "blobId"> & { size: number };

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

/** An allow or block list entry (src/access/rules.ts): `value` is a lower-case address or domain name. */
export interface AccessRuleRecord extends Timestamps {
  id: string;
  organizationId: string;
  /** Null: the rule covers every inbox of the organization. */
  inboxId: string | null;
  direction: AccessDirection;
  action: AccessAction;
  value: string;
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

/** An ACME account of one directory (RFC 8555 §7.3); the private key in the clear, as the store opens it. */
export interface AcmeAccountRecord extends Timestamps {
  directoryUrl: string;
  email: string;
  privateKeyPem: string;
  accountUrl: string | null;
}

/** A certificate inboxd obtains for one host name, and its renewal state; no certificate yet until the first issuance. */
export interface TlsCertificateRecord extends Timestamps {
  name: string;
  certificatePem: string | null;
  privateKeyPem: string | null;
  notBefore: number | null;
  notAfter: number | null;
  failures: number;
  lastError: string | null;
  nextAttemptAt: number;
}

/** A recipient domain's MTA-STS policy (RFC 8461 §3.2), cached until expiresAt. */
export interface MtaStsPolicyRecord {
  domain: string;
  policyId: string;
  mode: "enforce" | "testing" | "none";
  mxPatterns: string[];
  maxAge: number;
  fetchedAt: number;
  expiresAt: number;
}

export type DraftStatus = "draft" | "scheduled" | "sending" | "sent" | "failed";

/** A message composed ahead of sending (src/drafts/): every content field optional until it is sent. */
export interface DraftRecord extends Timestamps {
  id: string;
  organizationId: string;
  inboxId: string;
  /** A reply draft's thread, set when it is created. */
  threadId: string | null;
  inReplyToMessageId: string | null;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string | null;
  text: string | null;
  html: string | null;
  labels: string[];
  sendAt: number | null;
  status: DraftStatus;
  messageId: string | null;
  failureReason: string | null;
  /** Scheduled tries made so far. */
  attempts: number;
  /** When the drafts queue sends it: set only while it is scheduled or being sent. */
  nextAttemptAt: number | null;
}

/** A draft's attachment, decoded. */
export interface DraftAttachmentRecord {
  draftId: string;
  position: number;
  name: string | null;
  contentType: string;
  size: number;
  content: Buffer;
  /** Set when the content was staged as a large value (Store.blobs); `content` is then read back whole. */
  blobId: string | null;
}

/** The first request with an Idempotency-Key in an organization, and its final response once there is one. */
export interface IdempotencyKeyRecord {
  organizationId: string;
  key: string;
  /** SHA-256 of the request's method, path and body. */
  fingerprint: string;
  /** Null while the first request is still running. */
  statusCode: number | null;
  responseBody: Buffer | null;
  blobId: string | null;
  createdAt: number;
  expiresAt: number;
  /** The inbox the request's path named, if any: the key and its response go with it. */
  inboxId: string | null;
}

/** One policy domain's part of a TLS report (RFC 8460 §4.4) that a sending system mailed to us. */
export interface TlsReportRecord {
  id: string;
  reportId: string;
  organizationName: string;
  policyDomain: string;
  policyType: string;
  startAt: number;
  endAt: number;
  successfulSessions: number;
  failedSessions: number;
  failureDetails: { resultType: string; sessions: number; receivingMx: string | null }[];
  receivedAt: number;
  /** SHA-256 of the whole report as read: a resend has the same; null for reports stored before it was kept. */
  contentDigest: string | null;
}
