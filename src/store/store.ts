/**
 * The store: what services may ask of the database, in the domain's words. This file is the
 * contract an engine implements (src/store/sqlite/ is the embedded one). Every call returns a
 * Promise. A change that must be atomic runs in `transaction(async (tx) => …)` and uses `tx` only:
 * an engine may give each transaction a connection of its own, and the embedded one runs one
 * transaction at a time, so nothing outside it may run its statements in the meantime. Inside a
 * transaction, await only the store: a transaction held across network or timers holds up every
 * writer. Every query of a tenant's data takes its organization, so one tenant never sees
 * another's.
 */
import type { AccessDirection } from "../access/rules";
import type { DkimKeyStatus } from "../dkim/keys";
import type { EventName } from "../events/names";
import type { Logger } from "../log";
import type { DeliveryStatus } from "../outbound/policy";
import type { RunningPart } from "../running-part";
import type { WebhookDeliveryStatus } from "../webhooks/policy";
import type {
  DraftAttachmentRecord,
  DraftRecord,
  DraftStatus,
  IdempotencyKeyRecord,
  AcmeAccountRecord,
  MtaStsPolicyRecord,
  TlsReportRecord,
  TlsCertificateRecord,
  AccessRuleRecord,
  AccessTokenRecord,
  ApiKeyRecord,
  AttachmentRecord,
  ListedAttachmentRecord,
  DeliveryRecord,
  DkimKeyRecord,
  DomainRecord,
  EventRecord,
  InboxRecord,
  LoginThrottleRecord,
  MembershipRecord,
  MessageRecord,
  MessageSummaryRecord,
  OrganizationRecord,
  SuppressionRecord,
  ThreadRecord,
  UserRecord,
  WebhookAttemptRecord,
  WebhookDeliveryRecord,
  WebhookRecord,
  InboxCountsRecord,
  OutboundDeliveryRecord,
  ThreadOverviewRecord,
} from "./records";

export type { DeliveryStatus };

export interface Store extends Aggregates {
  /**
   * Runs `work` atomically; its writes are on disk when the promise settles. Nested calls (on
   * `tx`) are savepoints: a nested failure rolls back its own writes only if caught.
   */
  transaction<T>(work: (tx: Transaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Like `transaction`, but may share its commit (one sync to disk) with others queued meanwhile:
   * for the hot write paths (a received or sent message, the webhook queue's turns). A failing
   * `work` rolls back alone.
   */
  transactionBatched<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Large values written ahead of the transaction that stores their message. */
  blobs: BlobStaging;
  /** A tag of `value` under the installation's secret key, for `purpose` (../secret-box.ts): unforgeable by anyone else. */
  tag(purpose: string, value: string): string;
  /**
   * The engine's own background work while the server runs (the embedded one checkpoints its WAL).
   * On a database several nodes share, the node joins them first: refused (ConfigError) while a
   * live node serves another mail domain.
   */
  startMaintenance(log: Logger): Promise<RunningPart>;
  close(): void;
}

export interface Transaction extends Aggregates {
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
}

export interface TransactionOptions {
  /**
   * false: the commit survives a crash of the process but not of the machine until the next
   * durable commit (the outbound queue records a remote's acceptance at once this way, and the
   * turn that follows makes it durable).
   */
  waitForDisk?: boolean;
}

export interface Aggregates {
  accessRules: AccessRulesStore;
  accounts: AccountsStore;
  certificates: CertificatesStore;
  mtaStsPolicies: MtaStsPoliciesStore;
  tlsReports: TlsReportsStore;
  deliveries: DeliveriesStore;
  dkimKeys: DkimKeysStore;
  domains: DomainsStore;
  events: EventsStore;
  inboxes: InboxesStore;
  loginThrottles: LoginThrottlesStore;
  messages: MessagesStore;
  messageSearch: MessageSearchStore;
  sendWindows: SendWindowsStore;
  suppressions: SuppressionsStore;
  threads: ThreadsStore;
  webhooks: WebhooksStore;
  webhookQueue: WebhookQueueStore;
  acceptedInbound: AcceptedInboundStore;
  drafts: DraftsStore;
  idempotencyKeys: IdempotencyKeysStore;
}

/**
 * Bytes as the store keeps them: `bytes`, then the blob's when `blobId` names one. Small values are
 * inline, large ones staged ahead (`bytes` empty then); a received copy's source is its trace fields
 * inline, then the message as accepted, in the blob its acceptance wrote (AcceptedInbound.blobId).
 */
export interface StoredBytes {
  bytes: Uint8Array;
  blobId: string | null;
}

export interface BlobStaging {
  /**
   * The bytes of `parts`, one after the other, as they will be stored: inline when small, else
   * staged in pieces without holding up other work (call outside any transaction). The record
   * that names the blob claims it in its transaction.
   */
  prepare(parts: Uint8Array[], now: number): Promise<StoredBytes>;
  /** After that transaction: prepared blobs no record claimed (the write failed, or was a duplicate). */
  release(blobIds: string[]): Promise<void>;
}

/** What a list of access rules may be narrowed to; `inboxId: null` is the organization-wide entries only. */
export interface AccessRuleFilter {
  direction?: AccessDirection;
  action?: AccessRuleRecord["action"];
  inboxId?: string | null;
}

export interface AccessRulesStore {
  insert(rule: AccessRuleRecord): Promise<void>;
  find(organizationId: string, id: string): Promise<AccessRuleRecord | undefined>;
  /** The entry with the same scope, direction, action and value, if there is one. */
  findSame(rule: Pick<AccessRuleRecord, "organizationId" | "inboxId" | "direction" | "action" | "value">): Promise<AccessRuleRecord | undefined>;
  /** The organization-wide entries of the direction and those of the inbox (none of an inbox with `inboxId` null). */
  applying(organizationId: string, inboxId: string | null, direction: AccessDirection): Promise<AccessRuleRecord[]>;
  /** Newest first; ties within one millisecond in creation order. */
  list(organizationId: string, filter: AccessRuleFilter, page: number, per: number): Promise<AccessRuleRecord[]>;
  count(organizationId: string, filter: AccessRuleFilter): Promise<number>;
  delete(organizationId: string, id: string): Promise<void>;
}

export interface AccountsStore {
  insertUser(user: UserRecord): Promise<void>;
  /** Case-insensitive. */
  findUserByEmail(email: string): Promise<UserRecord | undefined>;
  findUser(id: string): Promise<UserRecord | undefined>;
  createOrganization(organization: { id: string; name: string }, now: number): Promise<OrganizationRecord>;
  findOrganization(id: string): Promise<OrganizationRecord | undefined>;
  insertMembership(membership: MembershipRecord): Promise<void>;
  findMembership(userId: string, organizationId: string): Promise<MembershipRecord | undefined>;
  /** Oldest membership first, so the default organization leads. */
  organizationIdsOfUser(userId: string): Promise<string[]>;
  insertAccessToken(token: AccessTokenRecord): Promise<void>;
  findAccessTokenByHash(tokenHash: string): Promise<AccessTokenRecord | undefined>;
  deleteExpiredAccessTokens(userId: string, now: number): Promise<void>;
  /** Whether a token with this hash existed (it is gone either way). */
  deleteAccessToken(tokenHash: string): Promise<boolean>;
  insertApiKey(key: Omit<ApiKeyRecord, "lastUsedAt">): Promise<void>;
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  touchApiKey(id: string, now: number): Promise<void>;
  findApiKey(organizationId: string, id: string): Promise<ApiKeyRecord | undefined>;
  /** Newest first; ties within one millisecond in creation order. */
  listApiKeys(organizationId: string, page: number, per: number): Promise<ApiKeyRecord[]>;
  countApiKeys(organizationId: string): Promise<number>;
  deleteApiKey(organizationId: string, id: string): Promise<void>;
}

/** A delivery as the outbound queue works on it. */
export interface QueuedDelivery {
  id: string;
  organizationId: string;
  messageId: string;
  recipient: string;
  domain: string;
  /** Tries made before this one. */
  attempts: number;
  /** When it fell due. */
  dueAt: number;
  /**
   * The remote's acceptance when it was committed but the rest of its try was not (a crash came
   * in between): the delivery came due again only to be recorded, never to be sent again.
   */
  acceptedReply: string | null;
}

/** What the queue needs of a message to move its status. */
export interface OutboundMessage {
  id: string;
  organizationId: string;
  inboxId: string;
  from: string;
  status: string;
}

/** A message with the bytes to send. */
export interface SendableMessage extends OutboundMessage {
  raw: Uint8Array;
}

export interface DeliveryUpdate {
  id: string;
  status: DeliveryStatus;
  lastResponse: string;
  /** Null once the delivery is final. */
  nextAttemptAt: number | null;
  /** The tries made, when fewer than counted: a try claimed (recordAttempt) but never made. */
  attempts?: number;
  now: number;
}

/** Work still to do, and when the oldest of it was queued (the metrics' queue depth and age). */
export interface QueueBacklog {
  depth: number;
  oldestCreatedAt: number | null;
}

/** What the organization's delivery list may be narrowed to; each given field must match. */
export interface DeliveryFilter {
  status?: string;
  /** The recipient's domain, lowercase. */
  domain?: string;
  inboxId?: string;
}

export interface DeliveriesStore {
  /** The organization's deliveries, newest first, with their messages' list fields; `extra` rows more past the page. */
  list(organizationId: string, filter: DeliveryFilter, page: number, per: number, extra?: number): Promise<OutboundDeliveryRecord[]>;
  backlog(): Promise<QueueBacklog>;
  /** When the first delivery due after `after` falls due (the queue sleeps until then). */
  nextDueAfter(after: number): Promise<number | undefined>;
  /** Destination domains with deliveries due, the longest-waiting first; the deliveries of `skipOrganizations` are not counted. */
  dueDomains(now: number, skipDomains: string[], skipOrganizations: string[], skipIds: string[], limit: number): Promise<string[]>;
  /**
   * The due deliveries of up to `limit` messages to `domain`, the longest-waiting first, one group
   * per message: what one SMTP transaction carries. Deliveries in `skip` (in flight) are left out.
   */
  dueGroups(domain: string, now: number, skip: ReadonlySet<string>, limit: number): Promise<QueuedDelivery[][]>;
  /** Counts a try before it is made; `retryAt` is when it is made again should its outcome never be recorded. */
  recordAttempt(id: string, retryAt: number, now: number): Promise<void>;
  /** Undoes recordAttempt for a try that was never made (claimed, then the queue stopped). */
  releaseAttempt(id: string, dueAt: number, now: number): Promise<void>;
  update(change: DeliveryUpdate): Promise<void>;
  /**
   * A remote server accepted the delivery: it is `delivered`, and due now until finishAccepted,
   * so that after a crash in between the restarted queue records the rest at once. Only a queued
   * delivery moves: a second call is a no-op, and a bounce report that came in between stands.
   */
  markAccepted(id: string, lastResponse: string, now: number): Promise<void>;
  /** The rest of the accepting try is recorded: the delivery is no longer due. */
  finishAccepted(id: string, now: number): Promise<void>;
  find(id: string): Promise<DeliveryRecord | undefined>;
  /**
   * Whether any of these deliveries is still this node's claim: not deleted (with its message) and,
   * with several nodes, not taken over by another after this node's lease ran out (a node paused
   * or cut off from the database). A lane looks before each transaction, so that a message is not
   * sent by two nodes.
   */
  stillClaimed(ids: string[]): Promise<boolean>;
  statusesOf(messageId: string): Promise<DeliveryStatus[]>;
  message(messageId: string): Promise<OutboundMessage | undefined>;
  setMessageStatus(messageId: string, status: string, now: number): Promise<void>;
  /** The message and its raw source, when it still exists. */
  sendable(messageId: string): Promise<SendableMessage | undefined>;
  /** The message with its attachments and deliveries, for presenting it. */
  messageWithParts(messageId: string): Promise<{ message: MessageRecord; attachments: AttachmentRecord[]; deliveries: DeliveryRecord[] } | undefined>;
}

/**
 * Where and how an inbound message arrived: what its analysis (SPF needs the peer, HELO and MAIL
 * FROM) and its stored copies (our Received field) need of the SMTP session once it is over.
 */
export interface InboundEnvelope {
  /** Names the transaction in our Received field, the 250 and the log. */
  transaction: string;
  clientIp: string;
  helo: string;
  /** The MAIL FROM address, its domain in A-labels; "" for the null reverse-path. */
  mailFrom: string;
  /** RFC 3848 protocol type: SMTP, ESMTP, ESMTPS. */
  protocol: string;
  tls?: { version: string; cipher: string };
  /** When the message was accepted. */
  receivedAt: number;
  /** One copy per inbox, named by the first address that reached it. */
  recipients: { organizationId: string; inboxId: string; address: string }[];
}

/** A due row of accepted mail, as the inbound queue chooses what to claim. */
export interface DueInbound {
  id: number;
  size: number;
  attempts: number;
  /** The client's peer group as accepted (src/net/peer-group.ts). */
  peer: string;
}

/** An accepted message as the inbound queue analyses it. */
export interface AcceptedInbound {
  id: number;
  envelope: InboundEnvelope;
  /** Bytes of the message, read with `source` after the claim's transaction (a large one takes many turns). */
  size: number;
  /** Analyses started, this one included. */
  attempts: number;
  /**
   * The blob that holds the message as accepted, for the copies' sources to name rather than
   * write again; null for a row an earlier version accepted with the message inline.
   */
  blobId: string | null;
}

/** Inbound mail accepted over SMTP (its 250 sent) and not analysed yet: the inbound queue's rows. */
export interface AcceptedInboundStore {
  backlog(): Promise<QueueBacklog>;
  /**
   * In the transaction whose commit comes before the 250; a staged source (`blobId`) is claimed, an
   * inline one written as a blob of one chunk.
   */
  accept(envelope: InboundEnvelope, peer: string, raw: StoredBytes, size: number, now: number): Promise<void>;
  /** When the first row due after `after` falls due (the queue sleeps until then). */
  nextDueAfter(after: number): Promise<number | undefined>;
  /**
   * Rows due at `now`, oldest first, with their sizes, analyses so far and peers; those the queue
   * holds (`skip.ids`) and those of peers at their share (`skip.peers`) left out.
   */
  due(now: number, skip: { ids: readonly number[]; peers: readonly string[] }, limit: number): Promise<DueInbound[]>;
  /** Counts an analysis before it starts and reads its row; `retryAt`: when it is due again should its outcome never be recorded. */
  claim(id: number, retryAt: number): Promise<AcceptedInbound | undefined>;
  /**
   * The message as accepted. Large ones are read a chunk per turn of the event loop on the
   * embedded engine: read whole, 20 MB held the event loop for over 100 ms.
   */
  source(id: number): Promise<Buffer | undefined>;
  /** Undoes `claim` for an analysis that never started (the queue stopped). */
  release(id: number, now: number): Promise<void>;
  /**
   * For an analysis that failed (or whose message could not be stored): due again at the retry
   * time its claim set, for any node. On a shared database its lease ends here: renewed with this
   * node's other claims, it kept the row from every node until this one stopped.
   */
  unclaim(id: number): Promise<void>;
  /**
   * In the transaction that stores the message's copies: the row goes, and its blob unless a copy
   * names it (every copy was a duplicate, or its inbox is gone; or the analysis changed the bytes). On a
   * database several nodes share, throws when the row is gone (another node took it over after
   * this one's claim ran out, and stored it).
   */
  finish(id: number): Promise<void>;
  /**
   * At start: what the last run had claimed and never finished (a crash) is due now. On a shared
   * database, what the earlier runs of this node claimed (other nodes' claims run out instead).
   */
  resume(now: number): Promise<void>;
}

export interface CertificatesStore {
  findAccount(directoryUrl: string): Promise<AcmeAccountRecord | undefined>;
  saveAccount(account: AcmeAccountRecord): Promise<void>;
  /** Every certificate, by name. */
  list(): Promise<TlsCertificateRecord[]>;
  /** When each certificate last changed, without opening any key: what a node compares to know whether to reload. */
  versions(): Promise<{ name: string; updatedAt: number }[]>;
  /** Adds the names not yet known, due at once. */
  want(names: string[], now: number): Promise<void>;
  /**
   * Removes what no node serves any more, given the names this node wants (which all nodes agree on
   * for mta-sts.<domain>): an unwanted name's certificate once it has expired (a live node that
   * wants it renews it long before), and an unwanted mta-sts name never issued. The names removed.
   */
  forgetUnwanted(wanted: string[], now: number): Promise<string[]>;
  due(now: number): Promise<TlsCertificateRecord[]>;
  /**
   * Claims a try: moves the next one on before it starts, so that a crash or another node never
   * repeats it at once. False when the certificate is no longer due at `now` (another node claimed it first).
   */
  postpone(name: string, now: number, nextAttemptAt: number): Promise<boolean>;
  recordIssued(name: string, issued: { certificatePem: string; privateKeyPem: string; notBefore: number; notAfter: number; nextAttemptAt: number }, now: number): Promise<void>;
  recordFailure(name: string, failure: { failures: number; lastError: string; nextAttemptAt: number }, now: number): Promise<void>;
  putChallenge(token: string, keyAuthorization: string, expiresAt: number): Promise<void>;
  /** The key authorization of an HTTP-01 challenge under way; expired ones are forgotten. */
  challenge(token: string, now: number): Promise<string | undefined>;
  removeChallenge(token: string): Promise<void>;
}

export interface MtaStsPoliciesStore {
  find(domain: string): Promise<MtaStsPolicyRecord | undefined>;
  save(policy: MtaStsPolicyRecord): Promise<void>;
}

export interface TlsReportsStore {
  /** A report sent twice (RFC 8460 §5.3 lets senders retry) is kept once; returns the ids of the rows kept now. */
  insert(rows: TlsReportRecord[]): Promise<string[]>;
  /**
   * The newest first, of those received `since` (a domain record's creation): a name another
   * organization held before, or that anyone wrote reports about before it was claimed, shows
   * none of those to its new holder.
   */
  forDomain(domain: string, since: number, limit: number, offset: number): Promise<TlsReportRecord[]>;
  countForDomain(domain: string, since: number): Promise<number>;
}

export interface DkimKeysStore {
  insert(keys: DkimKeyRecord[]): Promise<void>;
  /** Every key of a domain, oldest first: what its DNS must publish. */
  forDomain(domain: string): Promise<DkimKeyRecord[]>;
  /** The keys that sign mail from a domain now. */
  activeForDomain(domain: string): Promise<DkimKeyRecord[]>;
  /** The ids of activeForDomain, sorted. */
  activeIdsForDomain(domain: string): Promise<string[]>;
  setStatus(id: string, status: DkimKeyStatus, now: number): Promise<void>;
  remove(id: string): Promise<void>;
  removeForDomain(domain: string): Promise<void>;
}

export type DomainChanges = Partial<Omit<DomainRecord, "id" | "organizationId" | "name" | "createdAt">>;

/**
 * The `find`s, in a transaction, hold the domain until its end (on PostgreSQL the row is locked;
 * the embedded engine has one writer): a check made on it stands until the commit (an inbox
 * created on a domain being deleted, two key rotations, a verification and a rotation).
 */
export interface DomainsStore {
  insert(domain: DomainRecord): Promise<void>;
  /** `idOrName`: the identifier or the (ASCII, any case) name, as `{domainId}` in paths accepts both. */
  find(organizationId: string, idOrName: string): Promise<DomainRecord | undefined>;
  /** Across organizations: a name is claimed by one organization only. */
  findByName(name: string): Promise<DomainRecord | undefined>;
  findById(id: string): Promise<DomainRecord | undefined>;
  /** Newest first; ties within one millisecond in creation order. */
  list(organizationId: string, page: number, per: number): Promise<DomainRecord[]>;
  count(organizationId: string): Promise<number>;
  /**
   * The names of every domain whose MX is verified (mail for it comes here), across organizations:
   * whose MTA-STS policy inboxd serves, and whose records the operator's checks look at. Not only
   * the `verified` ones: a key rotation makes a domain `pending` until the new records verify, and
   * its policy must not lapse meanwhile.
   */
  receivingNames(): Promise<string[]>;
  /** Domains whose background check is due, most overdue first. */
  due(now: number, limit: number): Promise<DomainRecord[]>;
  update(id: string, changes: DomainChanges): Promise<void>;
  /** Its DKIM keys go with it. */
  delete(id: string): Promise<void>;
  /** The organization's inboxes with an address on the domain. */
  inboxesOnDomain(organizationId: string, name: string): Promise<InboxRecord[]>;
}

export interface NewEvent {
  organizationId: string;
  type: EventName;
  inboxId?: string;
  messageId?: string;
  payload: object;
}

export interface EventsStore {
  /**
   * Records the event and queues a delivery of it to every enabled webhook of its organization
   * that subscribes to its type. Call in the transaction of the change the event reports, so that
   * the change, the event and its deliveries commit together. Returns the event's id.
   */
  emit(event: NewEvent, now: number): Promise<string>;
  /**
   * Before a transaction emits for several organizations (a send to another's inbox, a batch of
   * the queues): takes the right to emit for each of them now, in one order. On PostgreSQL an
   * emit holds its organization's events until the commit, and two transactions that took two
   * organizations' in opposite orders deadlocked (SQLSTATE 40P01); the embedded engine writes
   * one transaction at a time and has nothing to take.
   */
  holdOrder(organizationIds: Iterable<string>): Promise<void>;
  /**
   * A page of the organization's events after `read.afterId` (from the oldest kept when null), in
   * id order, which must be the order they were committed in: a reader that resumes after the
   * last id it saw misses nothing and sees nothing twice. Webhook test events are not among them.
   */
  readAfter(organizationId: string, read: EventRead): Promise<EventPage>;
  /** The id of the organization's newest event (webhook test events aside), or null. */
  newestId(organizationId: string): Promise<string | null>;
  /**
   * Deletes up to `limit` events created before `before`, their finished webhook deliveries and
   * attempts with them; an event with a delivery still pending stays. Returns how many went.
   */
  purge(before: number, limit: number): Promise<number>;
}

export interface EventRead {
  afterId: string | null;
  /** At most this many events. */
  limit: number;
  /** Fewer once their payloads (whole, as a webhook gets them) pass this many characters; always one at least. */
  maxChars: number;
  /** Only events of these names (all when absent). */
  types?: readonly string[];
  /** Only events of this inbox. */
  inboxId?: string;
}

export interface EventPage {
  /** Payloads whole, as a webhook gets them. */
  events: EventRecord[];
  /** Where the next read continues: past the events returned and those the filters passed over; null when there is none yet. */
  nextAfterId: string | null;
  /** Whether more events may be ready to read now: a limit cut the page short, or the page reached its count. */
  more: boolean;
}

export interface InboxesStore {
  /** False when another inbox has the address (case-insensitive), also one created at the same moment. */
  insert(inbox: InboxRecord): Promise<boolean>;
  /**
   * In a transaction the inbox is held until its end (on PostgreSQL the row is locked, mail and
   * rows referring to it may still be added): it is not deleted or renamed meanwhile.
   */
  find(organizationId: string, id: string): Promise<InboxRecord | undefined>;
  /** Across organizations: inbound mail and local delivery route by address (case-insensitive). */
  findByEmail(email: string): Promise<InboxRecord | undefined>;
  list(organizationId: string, page: number, per: number): Promise<InboxRecord[]>;
  count(organizationId: string): Promise<number>;
  /** Each inbox's message and unread totals, in the order given. */
  counts(inboxIds: string[]): Promise<InboxCountsRecord[]>;
  rename(organizationId: string, id: string, name: string | null, now: number): Promise<InboxRecord | undefined>;
  /**
   * Deletes at most `limit` of the inbox's messages (with their sources, attachments and
   * deliveries), a thread at a time, in at most `limit` threads: a thread left without messages
   * goes, one left with some counts them. The slices of deleting a large inbox, which `delete`
   * then ends: cut off between two (a crash), the inbox's counts stay right. Returns how many
   * messages and threads it deleted: 0 when none is left.
   */
  deleteMessages(organizationId: string, id: string, limit: number): Promise<number>;
  /** Its threads, messages, sources, attachments and deliveries go with it. */
  delete(organizationId: string, id: string): Promise<InboxRecord | undefined>;
}

export interface LoginThrottlesStore {
  find(subjects: string[]): Promise<LoginThrottleRecord[]>;
  save(throttle: LoginThrottleRecord): Promise<void>;
  delete(subject: string): Promise<void>;
  /** Throttles whose window and lock have both ended. */
  prune(now: number): Promise<void>;
}

export interface MessagesStore {
  /**
   * The message, its raw RFC 5322 source and its attachments; call inside a transaction. Values
   * prepared as blobs (`blobId` set) are claimed here.
   */
  insert(message: MessageRecord, raw: StoredBytes, attachments: AttachmentRecord[]): Promise<void>;
  insertDeliveries(deliveries: DeliveryRecord[]): Promise<void>;
  /** In a transaction the message is held until its end, so that a change read and written there (labels) is the only one at a time. */
  find(organizationId: string, inboxId: string, id: string): Promise<MessageRecord | undefined>;
  /** Whether the inbox already received this message: its Message-ID with this digest (MessageRecord.receivedDigest), or with none (stored before digests were kept), among at most RESEND_LOOKUP_COPIES copies under that id. */
  hasReceived(inboxId: string, messageId: string, digest: string): Promise<boolean>;
  /** The thread of the message with this Message-ID in the inbox, if it holds one. */
  threadOfMessageId(inboxId: string, messageId: string): Promise<string | undefined>;
  /**
   * Newest first; nothing for another organization's inbox. With `extra`, that many more rows past
   * the page (to tell whether another page follows).
   */
  list(organizationId: string, inboxId: string, page: number, per: number, extra?: number): Promise<MessageSummaryRecord[]>;
  /** As `list`, only the messages with the label (exact, case-sensitive). */
  listLabeled(organizationId: string, inboxId: string, label: string, page: number, per: number, extra?: number): Promise<MessageSummaryRecord[]>;
  /** Replaces the message's labels; undefined when there is no such message. */
  setLabels(organizationId: string, inboxId: string, id: string, labels: string[], now: number): Promise<MessageRecord | undefined>;
  /** Oldest first. */
  listByThread(threadId: string): Promise<MessageRecord[]>;
  /**
   * The thread's messages in listByThread's order, each with the bytes of its text and HTML and
   * those of its attachments: what showing them would hold, found without reading them.
   */
  contentSizesInThread(threadId: string): Promise<{ id: string; textBytes: number; attachmentBytes: number }[]>;
  setRead(organizationId: string, inboxId: string, id: string, read: boolean, now: number): Promise<MessageRecord | undefined>;
  attachmentsOf(messageIds: string[]): Promise<AttachmentRecord[]>;
  /** As `attachmentsOf`, each with its size and without its content: no attachment's bytes are read. */
  attachmentListingsOf(messageIds: string[]): Promise<ListedAttachmentRecord[]>;
  /** One attachment of the message, with its content; undefined when the message has no such attachment. */
  attachment(messageId: string, attachmentId: string): Promise<AttachmentRecord | undefined>;
  deliveriesOf(messageIds: string[]): Promise<DeliveryRecord[]>;
  /** The RFC 5322 bytes as stored (sent: as composed; received: as accepted). */
  rawSource(messageId: string): Promise<Buffer | undefined>;
}

/**
 * What a regular expression cannot match without: literal substrings, all or one of which every
 * match contains (messages/regex-literals.ts). An engine turns it into an index query.
 */
export type LiteralRequirement = { kind: "literal"; text: string } | { kind: "all"; parts: LiteralRequirement[] } | { kind: "oneOf"; parts: LiteralRequirement[] };

/** Where a walk over an inbox's messages stopped; only the engine that gave it reads it. */
export type SearchPosition = { readonly engine: unknown };

/** What a regular expression is checked against, and where to continue from. */
export interface SearchableMessage {
  id: string;
  subject: string;
  /** Its first SEARCHED_TEXT_CHARS code points (./searched-text.ts), as far as a walk tests it. */
  text: string | null;
  from: string;
  position: SearchPosition;
}

/** One read of a walk: its rows, newest first, and where the next read starts (absent: the walk is over). */
export interface WalkStep {
  rows: SearchableMessage[];
  next?: SearchPosition;
}

export interface MessageSearchStore {
  /** Shortest literal the index can look up: a shorter one cannot narrow a search. */
  readonly minimumLiteralLength: number;
  /**
   * Longest word or phrase `containing` takes (undefined: any): a longer one is searched by a
   * walk, over the index's matches of its start (the embedded engine's index reads every
   * position of each of a phrase's trigrams in each candidate row).
   */
  readonly longestPhrase?: number;
  /**
   * Whether the index finds `text` in every case RE2's simple case folding matches (undefined:
   * always); when not, a search of it walks. The embedded engine's index folds with older tables.
   */
  foldsAsRe2?(text: string): boolean;
  /**
   * A page of the inbox's messages whose subject, text or sender holds `text` (any case), newest
   * first; with `extra`, that many more rows past the page (to tell whether another page follows);
   * with `label`, only the messages with that label.
   */
  containing(inboxId: string, text: string, page: number, per: number, extra?: number, label?: string): Promise<MessageSummaryRecord[]>;
  /**
   * At most the next `limit` messages of the inbox, newest first, after `after` (from the start
   * without it); with `requirement`, only those that satisfy it (and possibly some that do not);
   * with `label`, only the messages with that label. A read may give fewer and still a `next`:
   * the embedded engine reads its index a window of rowids at a time, and a walk takes its turn
   * of the event loop between two reads, never within one, so that its time budget counts only
   * its own reads (src/messages/search.ts).
   */
  walk(inboxId: string, requirement: LiteralRequirement | null, after: SearchPosition | undefined, limit: number, label?: string): Promise<WalkStep>;
  /**
   * Indexes the messages stored so far that wait for the index, so that a walk started after it
   * finds them: done before a walk, not in its budget (the embedded engine indexes in the
   * background, and after a burst of mail in any inbox that takes a while); PostgreSQL's indexes
   * take each row as it is written.
   */
  catchUp(): Promise<void>;
  /**
   * The list fields of the given messages, in the order given. A walk reads between other
   * requests, so a message it found may be gone since (its inbox deleted): such are left out.
   */
  summaries(messageIds: string[]): Promise<MessageSummaryRecord[]>;
  /**
   * Messages stored and not in the search index yet: the embedded engine indexes them in the
   * background, and a search first indexes what waits; PostgreSQL's indexes take each row as it
   * is written (0).
   */
  unindexed(): Promise<number>;
}

export interface SendWindowsStore {
  /** Sends counted so far in the window. */
  used(organizationId: string, windowStart: number): Promise<number>;
  /** Counts one send if the window has room: the new count, or undefined when it is full (atomic). */
  take(organizationId: string, windowStart: number, limit: number): Promise<number | undefined>;
}

export interface SuppressionsStore {
  find(organizationId: string, address: string): Promise<SuppressionRecord | undefined>;
  /** A first suppression of an address is kept; a later one only refreshes its reason and detail. */
  upsert(suppression: SuppressionRecord): Promise<void>;
  /** Newest first; ties within one millisecond in creation order. */
  list(organizationId: string, page: number, per: number): Promise<SuppressionRecord[]>;
  count(organizationId: string): Promise<number>;
  /** By its id or by the address itself. */
  findByIdOrAddress(organizationId: string, idOrAddress: string): Promise<SuppressionRecord | undefined>;
  delete(organizationId: string, id: string): Promise<void>;
}

export interface ThreadsStore {
  /** A new thread holding its first message. */
  insert(thread: Omit<ThreadRecord, "messageCount" | "lastMessageAt" | "updatedAt">): Promise<ThreadRecord>;
  addMessage(id: string, now: number): Promise<void>;
  find(organizationId: string, inboxId: string, id: string): Promise<ThreadRecord | undefined>;
  /** Newest activity first. */
  list(inboxId: string, page: number, per: number): Promise<ThreadRecord[]>;
  count(inboxId: string): Promise<number>;
  /** As `list`, only the threads with at least one message with the label. */
  listLabeled(inboxId: string, label: string, page: number, per: number): Promise<ThreadRecord[]>;
  countLabeled(inboxId: string, label: string): Promise<number>;
  /** What a mail list shows of each thread (its newest message's sender and text, labels, unread count); in no particular order. */
  overviews(threadIds: string[]): Promise<ThreadOverviewRecord[]>;
}

export type WebhookChanges = Partial<Pick<WebhookRecord, "url" | "events" | "enabled" | "disabledReason" | "firstFailureAt">>;

/** An attempt with the event it carried, from which the body that was sent is rebuilt. */
export interface AttemptWithEvent {
  attempt: WebhookAttemptRecord;
  event: EventRecord;
  /** When the attempt's delivery is tried next; null once it finished (succeeded, or failed for good). */
  nextAttemptAt: number | null;
}

export interface WebhooksStore {
  insert(webhook: WebhookRecord): Promise<void>;
  /** In a transaction the webhook is held until its end: it is not deleted meanwhile. */
  find(organizationId: string, id: string): Promise<WebhookRecord | undefined>;
  list(organizationId: string, page: number, per: number): Promise<WebhookRecord[]>;
  /** In a transaction the count holds until its end: two creates at the cap cannot both pass it. */
  count(organizationId: string): Promise<number>;
  update(id: string, changes: WebhookChanges, now: number): Promise<WebhookRecord>;
  /** Its deliveries and attempts go with it. */
  delete(id: string): Promise<void>;
  /** Disables a webhook and discards its pending deliveries (failed, kept for inspection); false when it was not enabled. */
  disable(id: string, reason: string, now: number): Promise<boolean>;
  /** Discards the webhook's pending deliveries of events of a type it no longer subscribes to (failed, kept for inspection); test events go on. */
  discardUnsubscribed(id: string, events: string[], now: number): Promise<void>;
  /**
   * An event for this webhook only, due at once: recorded with its delivery, without the fan-out of
   * `events.emit`. It takes the place of the webhook's test deliveries still pending (waiting for a
   * retry, or not yet tried), which end failed, their attempts kept: a test called again and again
   * queues one, not a growing backlog.
   */
  queueTestEvent(webhookId: string, event: EventRecord): Promise<void>;
  /** Brings a pending delivery's next try forward to `now`. */
  makeDue(deliveryId: number, now: number): Promise<void>;
  /**
   * A delivery of a recorded event to this webhook, due at `now` (an attempt sent again after its
   * delivery finished): a new one, or the one an earlier such call queued, still pending, brought
   * forward. However often a finished attempt is sent again, the event has one delivery under way.
   */
  queueDelivery(webhookId: string, eventId: string, now: number): Promise<void>;
  findDelivery(id: number): Promise<WebhookDeliveryRecord | undefined>;
  /** Newest first; ties (one batch of claims in one millisecond) by insertion order. */
  listAttempts(webhookId: string, page: number, per: number): Promise<AttemptWithEvent[]>;
  countAttempts(webhookId: string): Promise<number>;
  findAttempt(webhookId: string, attemptId: string): Promise<AttemptWithEvent | undefined>;
}

/** A webhook delivery that is due, with what sending it needs: endpoint, secret and the event. */
export interface DueWebhookDelivery {
  deliveryId: number;
  /** The webhook's organization: each may use at most half the sending slots (src/webhooks/queue.ts). */
  organizationId: string;
  /** When it fell due: where it goes back in the queue should its claim be given back. */
  dueAt: number;
  attempts: number;
  webhookId: string;
  url: string;
  secret: string;
  eventId: string;
  type: string;
  eventCreatedAt: number;
  inboxId: string | null;
  messageId: string | null;
  payload: string;
}

/** A try about to be made: its attempt record, written before the request goes out. */
export interface ClaimedAttempt extends Pick<WebhookAttemptRecord, "id" | "webhookId" | "deliveryId" | "event" | "url" | "attemptNumber" | "createdAt"> {
  /** The webhook's organization (not stored with the attempt: the queue counts each one's claims). */
  organizationId: string;
  /** The delivery's due time before the claim (DueWebhookDelivery.dueAt). */
  dueAt: number;
  /** When the delivery is tried again should the outcome never be recorded (a crash). */
  retryAt: number;
}

export interface AttemptOutcome {
  attemptId: string;
  deliveryId: number;
  statusCode: number | null;
  response: string | null;
  success: boolean;
  error: string | null;
  finishedAt: number;
  deliveryStatus: WebhookDeliveryStatus;
  nextAttemptAt: number | null;
}

export interface DueSkipped {
  urls: string[];
  deliveryIds: number[];
  organizationIds: string[];
}

export interface WebhookQueueStore {
  backlog(): Promise<QueueBacklog>;
  /** When the first delivery due after `after` falls due (the queue sleeps until then). */
  nextDueAfter(after: number): Promise<number | undefined>;
  /** Due deliveries, oldest first, but those of the URLs, deliveries and organizations in `skip` (at their limits, or in flight). */
  due(now: number, skip: DueSkipped, limit: number): Promise<DueWebhookDelivery[]>;
  /** Written before the requests go out, so a crash mid-try cannot cause a hot retry loop. */
  recordAttempts(attempts: ClaimedAttempt[]): Promise<void>;
  /**
   * Undoes claims that were never sent: no attempt record, and a pending delivery is due again as
   * before, in its place among those due at the same time (order per webhook holds).
   */
  releaseAttempts(attempts: ClaimedAttempt[]): Promise<void>;
  /**
   * The deliveries of those claims that are no longer what was claimed: gone with their webhook,
   * not pending (discarded when it was disabled), or whose webhook's URL is no longer the claim's.
   */
  staleClaims(claims: Pick<ClaimedAttempt, "id" | "deliveryId" | "url">[]): Promise<Set<number>>;
  recordOutcomes(outcomes: AttemptOutcome[]): Promise<void>;
  /** A delivery whose tries are used up: it stays, marked failed. */
  discard(deliveryId: number, now: number): Promise<void>;
  endFailureRun(webhookId: string): Promise<void>;
  /** Starts the run of failures at `at` unless one is on; its start, or undefined for a deleted webhook. */
  extendFailureRun(webhookId: string, at: number): Promise<number | undefined>;
  isEnabled(webhookId: string): Promise<boolean>;
  /**
   * After a crash or a shutdown that could not wait: tries whose outcome never came back (on a
   * shared database, those no node holds any more; other nodes' tries in flight are theirs).
   */
  closeUnfinishedAttempts(now: number, error: string): Promise<void>;
}

/** A draft's attachment as lists show it: without its content. */
export type DraftAttachmentSummary = Pick<DraftAttachmentRecord, "draftId" | "position" | "name" | "contentType" | "size">;

/** How a try of a draft ended when it did not send it (src/drafts/queue.ts). */
export interface DraftSettlement {
  status: Exclude<DraftStatus, "sending" | "sent">;
  nextAttemptAt: number | null;
  failureReason: string | null;
}

export interface DraftsStore {
  /** The draft with its attachments; prepared blobs (`blobId` set) are claimed here. */
  insert(draft: DraftRecord, attachments: DraftAttachmentRecord[]): Promise<void>;
  /** In a transaction the draft is held until its end, so that a change read and written there is the only one at a time. */
  find(organizationId: string, inboxId: string, id: string): Promise<DraftRecord | undefined>;
  /** Newest first; ties within one millisecond in creation order. */
  list(organizationId: string, inboxId: string, page: number, per: number): Promise<DraftRecord[]>;
  count(organizationId: string, inboxId: string): Promise<number>;
  /** Writes every field of the draft; with `attachments`, they replace the ones it had. */
  update(draft: DraftRecord, attachments?: DraftAttachmentRecord[]): Promise<void>;
  /** Its attachments go with it; false when there was no such draft. */
  delete(organizationId: string, inboxId: string, id: string): Promise<boolean>;
  attachmentSummaries(draftIds: string[]): Promise<DraftAttachmentSummary[]>;
  /** In position order, content read back whole. */
  attachments(draftId: string): Promise<DraftAttachmentRecord[]>;
  /**
   * Moves the draft to `sending` if its status is one of `from` (atomic: one claim wins), counting
   * a try. The draft as claimed, or undefined.
   */
  claim(id: string, from: DraftStatus[], now: number): Promise<DraftRecord | undefined>;
  /** The ids of scheduled drafts due at `now`, the longest-waiting first, but for those of the `busy` organizations. */
  due(now: number, limit: number, busy: readonly string[]): Promise<string[]>;
  /** When the first scheduled draft due after `after` falls due (the queue sleeps until then). */
  nextDueAfter(after: number): Promise<number | undefined>;
  /** A draft being sent is sent: in the transaction that stores the message. False when it was not being sent. */
  markSent(id: string, messageId: string, now: number): Promise<boolean>;
  /** A draft being sent was not: scheduled again, back to a draft, or failed. */
  settle(id: string, settlement: DraftSettlement, now: number): Promise<void>;
  /**
   * After a crash: drafts left `sending` by an earlier process were not sent (sending and marking
   * commit together), so they are scheduled again (a draft with sendAt) or drafts; never one this
   * process is sending. On a database several nodes share: never those another node is sending
   * (its lease holds them), and those of a node that died, once its lease ran out.
   */
  releaseUnfinished(now: number): Promise<number>;
}

export interface IdempotencyKeysStore {
  /**
   * Removes expired keys, then records the key as running unless the organization holds it
   * already: undefined when recorded, else the record that holds it.
   */
  begin(record: IdempotencyKeyRecord, now: number): Promise<IdempotencyKeyRecord | undefined>;
  /**
   * The first request's final response, kept if its key is still held as running; a large body
   * prepared as a blob is claimed with it. A key gone meanwhile (its inbox deleted) keeps nothing:
   * the unclaimed blob is the caller's to release.
   */
  complete(organizationId: string, key: string, statusCode: number, body: StoredBytes): Promise<void>;
  /** Forgets a key whose first request ended without a response worth replaying (5xx), so that a retry runs. */
  release(organizationId: string, key: string): Promise<void>;
  /**
   * As the server starts, before it takes a request: keys still running from an earlier process
   * (a crash) are forgotten, as release does. On a database several nodes share, never one a live
   * node's request holds; `startedAt` bounds how long a request may hold one.
   */
  releaseUnfinished(startedAt: number): Promise<number>;
  /** The keys of requests that named the inbox, with their responses: the inbox is deleted. */
  forgetInbox(organizationId: string, inboxId: string): Promise<void>;
}

