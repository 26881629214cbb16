/**
 * The response schemas of every route: what `src/*\/present.ts` builds, field for field, as
 * TypeBox. The OpenAPI document (openapi.ts) is generated from them and from the routes' request
 * schemas; nothing in it is written by hand.
 *
 * They describe responses without changing them. Each object allows fields it does not list
 * (`additionalProperties: true`), so Elysia's response normalising (exact-mirror) copies every
 * field through in its own order instead of dropping the ones it does not know, and each carries
 * `noValidate`, so a response is never refused at run time for its shape: the bytes served are the
 * bytes the services' objects serialize to. Whether the schemas are true is for the tests (ajv on
 * real responses, test/http/openapi.test.ts) and for the compiler: `sameKeys` below fails to
 * compile when a present.ts shape gains or loses a field that its schema does not.
 */
import { withHeaders } from "@elysiajs/openapi/openapi";
import { t } from "elysia";
import { Type, type Static, type TNull, type TOptional, type TProperties, type TSchema, type TUnion } from "@sinclair/typebox";
import type { login, register } from "../auth/accounts";
import type { CreatedApiKeyRecord, Organization as OrganizationShape, User as UserShape } from "../auth/present";
import type { Domain as DomainShape, DomainRecord } from "../domains/present";
import type { TlsReport as TlsReportShape } from "../mta-sts/present";
import type { Draft as DraftShape, DraftAttachment as DraftAttachmentShape } from "../drafts/present";
import type { Inbox as InboxShape, InboxWithCounts as InboxWithCountsShape } from "../inboxes/present";
import type { Message as MessageShape, MessageSummary as MessageSummaryShape, Thread as ThreadShape } from "../messages/present";
import type { Attachment as AttachmentShape, Delivery as DeliveryShape } from "../messages/shapes";
import type { Suppression as SuppressionShape } from "../outbound/suppressions";
import type { OutboundDelivery as OutboundDeliveryShape } from "../outbound/deliveries";
import type { AccessRule as AccessRuleShape } from "../access/service";
import type { Webhook as WebhookShape, WebhookAttempt as WebhookAttemptShape } from "../webhooks/present";

/** A JSON object of the API: named (it becomes `#/components/schemas/<title>`), open to fields added later. */
const shape = <P extends TProperties>(title: string, description: string, properties: P) =>
  t.Object(properties, { title, description, additionalProperties: true, noValidate: true });

/**
 * A field `resource()` (src/present.ts) leaves out when it has no value: on the wire it is absent,
 * never null. The service types still say `| null` (resource drops the nulls at run time), hence
 * the wider static type; the schema itself is the plain optional field.
 */
const omitted = <S extends TSchema>(schema: S) => t.Optional(schema) as unknown as TOptional<TUnion<[S, TNull]>>;

const id = (description = "identifier") => t.String({ description });
const alias = t.String({ description: "the same value as id, for existing clients" });
const timestamp = (description: string) => t.String({ format: "date-time", description });
// TypeBox's own Integer: Elysia's `t.Integer` also takes numeric strings, for queries.
const count = (description: string) => Type.Integer({ minimum: 0, description });
/** One of a few words: a string with `enum` (a union of literals would lose its description in the document). */
const oneOf = (values: string[], description: string) => t.String({ enum: values, description });

/** An array response that is not paged. */
export const arrayOf = <S extends TSchema>(item: S, description: string) => t.Array(item, { description, noValidate: true });

/** A paged list: a plain array, its neighbours and size in headers (src/http/pagination.ts). */
export const listOf = <S extends TSchema>(item: S, description: string) =>
  withHeaders(arrayOf(item, description), {
    Link: t.String({ description: "RFC 8288 links to the `next`, `prev`, `first` and `last` pages (`next` only when one follows; `last` only with X-Total-Count)" }),
    "X-Total-Count": Type.Integer({ description: "items in the whole list; left out where not counted (the message list and its searches)" }),
  });

/**
 * Compiles only when the schema's fields are exactly the shape's: `true` is then assignable, and
 * otherwise the error names the fields that differ.
 */
type SameKeys<Schema, Shape> = [Exclude<keyof Schema, keyof Shape>, Exclude<keyof Shape, keyof Schema>] extends [never, never]
  ? true
  : { fieldsOnlyInSchema: Exclude<keyof Schema, keyof Shape>; fieldsOnlyInShape: Exclude<keyof Shape, keyof Schema> };
const sameKeys = <Schema extends TSchema, Shape>(_: SameKeys<Static<Schema>, Shape>) => undefined;

// --- Accounts ---------------------------------------------------------------------------------

export const User = shape("User", "A user account", {
  id: id(),
  email: t.String({ description: "the login email, also the username" }),
  firstName: t.String(),
  lastName: t.String(),
  organizations: t.Array(t.String(), { description: "identifiers of the organizations the user is a member of" }),
  _id: alias,
});
sameKeys<typeof User, UserShape>(true);

export const Organization = shape("Organization", "An organization: it owns inboxes, keys, webhooks and domains", {
  id: id(),
  name: t.String(),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Organization, OrganizationShape>(true);

const apiKeyFields = {
  id: id(),
  organizationId: t.String(),
  name: t.String(),
  prefix: t.String({ description: "the first characters of the key, to recognise it by" }),
  createdAt: timestamp("ISO 8601"),
  lastUsedAt: t.Optional(timestamp("last use, to the minute; left out until the key is used")),
  _id: alias,
};

export const ApiKey = shape("ApiKey", "An API key record: never the key itself", apiKeyFields);
sameKeys<typeof ApiKey, Omit<CreatedApiKeyRecord, "key">>(true);

export const CreatedApiKey = shape("CreatedApiKey", "A new API key record with the key, shown this once", {
  ...apiKeyFields,
  key: t.String({ description: "the API key (`ik_...`): use it as `Authorization: Bearer <key>` under /v1" }),
});
sameKeys<typeof CreatedApiKey, CreatedApiKeyRecord>(true);

const accessToken = t.String({ description: "an access token, valid 7 days: `Authorization: Bearer <token>` under /organizations" });

// --- Inboxes ----------------------------------------------------------------------------------

const inboxFields = {
  id: id(),
  organizationId: t.String(),
  name: omitted(t.String({ description: "left out when the inbox has none" })),
  email: t.String({ description: "the inbox's address" }),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
};

export const Inbox = shape("Inbox", "An inbox: an address that sends and receives", inboxFields);
sameKeys<typeof Inbox, InboxShape>(true);

export const InboxWithCounts = shape("InboxWithCounts", "An inbox with its message and unread totals, as the inbox list and get show it", {
  ...inboxFields,
  messageCount: count("messages in the inbox, sent and received"),
  unreadCount: count("messages not yet read (received mail starts unread)"),
});
sameKeys<typeof InboxWithCounts, InboxWithCountsShape>(true);

export const Registration = shape("Registration", "The new account: user, organization, default API key (with its key), access token and first inbox", {
  user: User,
  token: accessToken,
  organization: Organization,
  apiKey: CreatedApiKey,
  inbox: Inbox,
});

sameKeys<typeof Registration, Awaited<ReturnType<typeof register>>>(true);

export const Login = shape("Login", "The user and a new access token", { user: User, token: accessToken });
sameKeys<typeof Login, Awaited<ReturnType<typeof login>>>(true);

// --- Messages and threads ---------------------------------------------------------------------

export const Attachment = shape("Attachment", "A file attached to a message", {
  id: id("download it at /v1/inboxes/{inboxId}/messages/{messageId}/attachments/{id}"),
  name: t.Optional(t.String({ description: "file name" })),
  contentType: t.Optional(t.String({ description: "media type" })),
  size: count("bytes"),
  contentId: t.Optional(t.String({ description: "Content-ID, for an inline part an HTML body refers to (cid:)" })),
  inline: t.Boolean(),
  content: t.Optional(t.String({ description: "base64; left out with attachmentContent=false" })),
});
sameKeys<typeof Attachment, AttachmentShape>(true);

/** `?attachmentContent=false` on a message or thread read: the attachments listed without their content. */
export const attachmentContentQuery = t.Object({
  attachmentContent: t.Optional(t.Union([t.Literal("true"), t.Literal("false")], { error: "must be true or false", description: "false lists the attachments without their base64 content (default true)" })),
});

export const Delivery = shape("Delivery", "The delivery of a sent message to one remote recipient", {
  recipient: t.String(),
  status: t.String({ description: "queued, delivered, bounced or rejected" }),
  attempts: count("tries so far"),
  lastResponse: t.Optional(t.String({ description: "the receiving server's last answer, or why it was not tried" })),
  nextAttemptAt: t.Optional(timestamp("when the next try is due; left out once the delivery is final")),
  expiresAt: t.Optional(timestamp("while queued: when the last try falls due, the recipient bouncing should it fail too")),
  updatedAt: timestamp("ISO 8601"),
});
sameKeys<typeof Delivery, DeliveryShape>(true);

export const Authentication = shape("Authentication", "SPF, DKIM and DMARC results of a received message", {
  spf: t.String({ description: "pass, fail, softfail, neutral, none, temperror or permerror" }),
  dkim: t.String({ description: "pass, fail, none, ..." }),
  dmarc: t.String({ description: "pass, fail, none, ..." }),
  arc: t.Optional(t.String({ description: "ARC result, when the message carried an ARC set" })),
});

const messageStatus = t.String({ description: "sent, received, delivered, bounced, complained or rejected" });

export const Message = shape("Message", "A message with every field", {
  id: id(),
  organizationId: t.String(),
  inboxId: t.String({ description: "the inbox the message belongs to" }),
  threadId: t.String(),
  fromInboxId: omitted(t.String({ description: "the inbox it was sent from, when that is an inbox of this server" })),
  toInboxId: omitted(t.String({ description: "the inbox it was delivered to, when that is an inbox of this server" })),
  from: t.String({ description: "the sender's address" }),
  fromName: omitted(t.String({ description: "the sender's display name, when there is one" })),
  to: t.Array(t.String()),
  cc: t.Array(t.String()),
  bcc: t.Array(t.String()),
  replyTo: t.Optional(t.Array(t.String(), { description: "a received message's Reply-To addresses, where its author asks replies to go (a reply goes there); left out when it names none" })),
  subject: t.String(),
  text: omitted(t.String({ description: "plain text body; left out when there is none" })),
  html: omitted(t.String({ description: "HTML body; left out when there is none" })),
  labels: t.Array(t.String()),
  read: t.Boolean({ description: "whether the message was read: received mail starts unread, sent mail read; PATCH sets it" }),
  attachments: t.Array(Attachment),
  externalMessageId: omitted(t.String({ description: "the Message-ID header" })),
  status: messageStatus,
  authentication: omitted(Authentication),
  deliveries: t.Array(Delivery, { description: "one per remote recipient of a sent message" }),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Message, MessageShape>(true);

export const MessageSummary = shape("MessageSummary", "A message as lists show it: a subset of its fields", {
  id: id(),
  organizationId: t.String(),
  inboxId: t.String(),
  threadId: t.String(),
  from: t.String(),
  fromName: omitted(t.String({ description: "the sender's display name, when there is one" })),
  to: t.Array(t.String()),
  subject: t.String(),
  text: omitted(t.String()),
  html: omitted(t.String()),
  labels: t.Array(t.String()),
  read: t.Boolean({ description: "whether the message was read" }),
  status: messageStatus,
  createdAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof MessageSummary, MessageSummaryShape>(true);

const threadFields = {
  id: id(),
  organizationId: t.String(),
  inboxId: t.String(),
  subject: t.String(),
  from: t.String({ description: "the sender of its newest message" }),
  fromName: omitted(t.String({ description: "that sender's display name, when there is one" })),
  preview: omitted(t.String({ description: "the start of its newest message's text, on one line (up to 200 characters); left out when it has none" })),
  labels: t.Array(t.String(), { description: "every label of its messages, once each" }),
  unreadCount: count("its messages not yet read"),
  attachmentCount: count("attachments of its messages, inline parts left out"),
  messageCount: count("messages in the thread"),
  lastMessageAt: timestamp("when its newest message came"),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
};

export const Thread = shape("Thread", "A conversation: a sent message and its replies, or received messages threaded by their headers", threadFields);
sameKeys<typeof Thread, ThreadShape>(true);

export const ThreadWithMessages = shape("ThreadWithMessages", "A thread with its messages, oldest first", {
  ...threadFields,
  messages: t.Array(Message),
});
sameKeys<typeof ThreadWithMessages, ThreadShape & { messages: MessageShape[] }>(true);

// --- Webhooks ---------------------------------------------------------------------------------

const webhookFields = {
  id: id(),
  organizationId: t.String(),
  url: t.String({ description: "where events are POSTed" }),
  events: t.Array(t.String(), { description: "the subscribed event names" }),
  enabled: t.Boolean({ description: "false once disabled, by the owner or after failing for days" }),
  disabledReason: omitted(t.String({ description: "why it was disabled" })),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
};

export const Webhook = shape("Webhook", "A webhook: a URL that receives events", webhookFields);
sameKeys<typeof Webhook, WebhookShape>(true);

export const CreatedWebhook = shape("CreatedWebhook", "A new webhook with its signing secret, shown this once", {
  ...webhookFields,
  secret: t.String({ description: "`whsec_...`: verifies the Standard Webhooks signature of every delivery" }),
});
sameKeys<typeof CreatedWebhook, WebhookShape & { secret: string }>(true);

export const WebhookAttempt = shape("WebhookAttempt", "One try at delivering an event to a webhook", {
  id: id(),
  webhookId: t.String(),
  eventId: t.String({ description: "stable across the retries of one event" }),
  event: t.String({ description: "the event name" }),
  payload: t.Object({}, { additionalProperties: true, description: "the body that was sent" }),
  url: t.String(),
  statusCode: omitted(Type.Integer({ description: "the endpoint's HTTP status, when it answered" })),
  response: omitted(t.String({ description: "the start of the endpoint's answer" })),
  success: t.Boolean({ description: "true for a 2xx answer" }),
  error: omitted(t.String({ description: "why the try failed without an answer" })),
  attemptNumber: Type.Integer({ minimum: 1, description: "1 to 5" }),
  createdAt: timestamp("ISO 8601"),
  finishedAt: t.Optional(timestamp("when the try ended; left out while it is under way")),
  nextAttemptAt: t.Optional(timestamp("when the delivery is tried next; left out once it finished")),
  _id: alias,
});
sameKeys<typeof WebhookAttempt, WebhookAttemptShape>(true);

export const Success = shape("Success", "The request was carried out", { success: t.Boolean() });

export const TlsReport = shape("TlsReport", "A TLS report (RFC 8460) about the domain, as one sending organization mailed it: its sessions to the domain's MX over one period", {
  id: id(),
  reportId: t.String({ description: "the sender's report-id" }),
  organizationName: t.String({ description: "who sent the report" }),
  policyType: t.String({ description: "sts (MTA-STS), tlsa (DANE) or no-policy-found" }),
  startAt: timestamp("start of the period reported"),
  endAt: timestamp("end of the period reported"),
  successfulSessions: Type.Integer({ minimum: 0, description: "TLS sessions that succeeded" }),
  failedSessions: Type.Integer({ minimum: 0, description: "sessions that failed (TLS could not be set up as the policy requires)" }),
  failureDetails: t.Array(
    t.Object({
      resultType: t.String({ description: "RFC 8460 §4.3 result-type, e.g. certificate-host-mismatch, starttls-not-supported" }),
      sessions: Type.Integer({ minimum: 0 }),
      receivingMx: t.Optional(t.String({ description: "the MX host the sender tried" })),
    }),
  ),
  receivedAt: timestamp("when inboxd received it"),
  _id: alias,
});
sameKeys<typeof TlsReport, TlsReportShape>(true);

// --- Domains ----------------------------------------------------------------------------------

const checkStatus = (description: string) => oneOf(["pending", "verified", "failed"], description);

export const DnsRecord = shape("DnsRecord", "A DNS record the domain publishes, with the result of its last look-up", {
  type: oneOf(["MX", "TXT", "CNAME"], "record type"),
  name: t.String({ description: "the record's owner name" }),
  value: t.String(),
  priority: t.Optional(Type.Integer({ description: "MX only" })),
  purpose: oneOf(["receiving", "sending", "tls"], "what it is needed for; tls (MTA-STS, TLS reporting) records are recommended and do not count towards the domain's status"),
  status: checkStatus("pending before it is seen, verified, or failed"),
  reason: t.Optional(t.String({ description: "why it is not verified yet" })),
});
sameKeys<typeof DnsRecord, DomainRecord>(true);

export const Domain = shape("Domain", "A custom domain", {
  id: id(),
  organizationId: t.String(),
  name: t.String({ description: "the domain name" }),
  status: checkStatus("failed when a record failed, verified when all are, pending otherwise"),
  verified: t.Boolean({ description: "every record verified but the tls ones" }),
  receiving: t.Boolean({ description: "MX verified" }),
  sending: t.Boolean({ description: "SPF, DKIM and DMARC verified" }),
  records: t.Array(DnsRecord),
  verifiedAt: t.Optional(timestamp("when it was first verified")),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Domain, DomainShape>(true);

// --- Access rules -----------------------------------------------------------------------------

export const AccessRule = shape("AccessRule", "An allow or block list entry for received or sent mail", {
  id: id(),
  organizationId: t.String(),
  inboxId: omitted(t.String({ description: "the inbox it applies to; left out for every inbox of the organization" })),
  direction: oneOf(["receive", "send"], "receive: senders of mail to the inboxes; send: recipients of mail from them"),
  action: oneOf(["allow", "block"], "block refuses what it matches; allow entries, once there is one, let only what they match through"),
  value: t.String({ description: "a lower-case address, or a domain name that also covers its subdomains" }),
  kind: oneOf(["address", "domain"], "what value is"),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof AccessRule, AccessRuleShape>(true);

// --- Drafts -----------------------------------------------------------------------------------

/** A field a draft shows as null until it has a value (the contract of the drafts routes). */
const nullable = <S extends TSchema>(schema: S, description: string) => t.Union([schema, t.Null()], { description });

export const DraftAttachment = shape("DraftAttachment", "A file attached to a draft, listed without its content", {
  name: nullable(t.String(), "file name"),
  contentType: t.String({ description: "media type" }),
  size: count("bytes"),
});
sameKeys<typeof DraftAttachment, DraftAttachmentShape>(true);

export const Draft = shape("Draft", "A message composed ahead of sending; scheduled when sendAt is set", {
  id: id(),
  inboxId: t.String(),
  threadId: nullable(t.String(), "a reply draft's thread; null for a new message"),
  inReplyToMessageId: nullable(t.String(), "the message a reply draft answers"),
  to: t.Array(t.String()),
  cc: t.Array(t.String()),
  bcc: t.Array(t.String()),
  subject: nullable(t.String(), "null until set"),
  text: nullable(t.String(), "null until set"),
  html: nullable(t.String(), "null until set"),
  labels: t.Array(t.String()),
  attachments: t.Array(DraftAttachment),
  sendAt: nullable(timestamp("ISO 8601"), "when the scheduled send goes out; null when not scheduled"),
  status: oneOf(["draft", "scheduled", "sending", "sent", "failed"], "draft, scheduled (sendAt set), sending (being sent now), sent (messageId set) or failed (failureReason says why)"),
  messageId: nullable(t.String(), "the sent message"),
  failureReason: nullable(t.String(), "why a scheduled send failed"),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Draft, DraftShape>(true);

// --- The outbound queue ---------------------------------------------------------------------------

export const OutboundDelivery = shape("OutboundDelivery", "One remote recipient's delivery, with the message it belongs to", {
  id: id(),
  messageId: t.String(),
  inboxId: t.String({ description: "the inbox that sent the message" }),
  threadId: t.String(),
  subject: t.String(),
  from: t.String({ description: "the sending inbox's address" }),
  fromName: omitted(t.String({ description: "its name, when it has one" })),
  domain: t.String({ description: "the recipient's domain, lowercase" }),
  ...Delivery.properties,
  createdAt: timestamp("when the message was sent"),
  _id: alias,
});
sameKeys<typeof OutboundDelivery, OutboundDeliveryShape>(true);

// --- Suppressions -----------------------------------------------------------------------------

export const Suppression = shape("Suppression", "An address sends skip, after it hard-bounced or complained", {
  id: id(),
  organizationId: t.String(),
  address: t.String(),
  reason: oneOf(["bounced", "complained"], "why it is suppressed"),
  detail: omitted(t.String({ description: "the bounce or complaint it came from" })),
  messageId: omitted(t.String({ description: "the message that bounced or was complained about" })),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Suppression, SuppressionShape>(true);

// --- Health and plain responses -----------------------------------------------------------------

export const Health = shape("Health", "The service is up", { healthy: t.Boolean(), environment: t.String({ description: "INBOXD_ENV" }) });

/** The response of a rate-limited route (send, reply, forward), with its rate-limit headers. */
export const rateLimited = <S extends TSchema>(schema: S) =>
  withHeaders(schema, {
    "RateLimit-Limit": Type.Integer({ description: "sends allowed per window (INBOXD_SEND_LIMIT)" }),
    "RateLimit-Remaining": Type.Integer({ description: "sends left in this window" }),
    "RateLimit-Reset": Type.Integer({ description: "seconds until the window resets" }),
    "RateLimit-Policy": t.String({ description: "`<limit>;w=3600`" }),
  });

/** A body that is not JSON: `mediaType` becomes its content type in the document (openapi.ts). */
export const bytes = (mediaType: string, description: string) => t.String({ description, contentMediaType: mediaType, noValidate: true });

// --- Errors -----------------------------------------------------------------------------------

/** What each status means, whatever the route (src/http/errors.ts maps the error kinds to them). */
const statusMeaning = {
  400: "Malformed JSON, or a body that is not application/json",
  401: "Missing, malformed or invalid credential",
  403: "The access token's user is not a member of the organization",
  404: "Not found, or another organization's",
  409: "Conflicts with what exists",
  413: "Body over 20 MB",
  415: "A body under a Content-Encoding: send it uncompressed",
  422: "A field fails validation: `error` names it",
  429: "Too many requests: try again after Retry-After seconds",
  503: "Busy with other large messages: try again after Retry-After seconds",
} as const;

export type ErrorStatus = keyof typeof statusMeaning;

/** Every failure's body: exactly `{error}`. */
const errorBody = (description: string) =>
  t.Object({ error: t.String({ description: "what went wrong" }) }, { title: "Error", description, additionalProperties: false, noValidate: true });
type ErrorBody = ReturnType<typeof errorBody>;

/**
 * The `{error}` responses of a route, by status; a status may come with the route's own wording
 * (`[404, "Inbox or message not found"]`).
 */
export function failures<const S extends ErrorStatus>(...statuses: Array<S | readonly [S, string]>): Record<S, ErrorBody> {
  const responses = {} as Record<S, ErrorBody>;
  for (const entry of statuses) {
    const [status, description]: readonly [S, string] = typeof entry === "number" ? [entry, statusMeaning[entry]] : entry;
    responses[status] = errorBody(description);
  }
  return responses;
}

/** The failures every route with a JSON body can give besides its own: 400, 413, 415, 422, 503. */
export const bodyFailures = [400, 413, 415, 422, 503] as const;
