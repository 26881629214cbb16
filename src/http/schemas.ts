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
import type { Inbox as InboxShape } from "../inboxes/present";
import type { Message as MessageShape, MessageSummary as MessageSummaryShape, Thread as ThreadShape } from "../messages/present";
import type { Attachment as AttachmentShape, Delivery as DeliveryShape } from "../messages/shapes";
import type { Suppression as SuppressionShape } from "../outbound/suppressions";
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

export const Inbox = shape("Inbox", "An inbox: an address that sends and receives", {
  id: id(),
  organizationId: t.String(),
  name: omitted(t.String({ description: "left out when the inbox has none" })),
  email: t.String({ description: "the inbox's address" }),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Inbox, InboxShape>(true);

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
  content: t.String({ description: "base64" }),
});
sameKeys<typeof Attachment, AttachmentShape>(true);

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
  subject: t.String(),
  text: omitted(t.String({ description: "plain text body; left out when there is none" })),
  html: omitted(t.String({ description: "HTML body; left out when there is none" })),
  labels: t.Array(t.String()),
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
  to: t.Array(t.String()),
  subject: t.String(),
  text: omitted(t.String()),
  html: omitted(t.String()),
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

// --- Domains ----------------------------------------------------------------------------------

const checkStatus = (description: string) => oneOf(["pending", "verified", "failed"], description);

export const DnsRecord = shape("DnsRecord", "A DNS record the domain publishes, with the result of its last look-up", {
  type: oneOf(["MX", "TXT"], "record type"),
  name: t.String({ description: "the record's owner name" }),
  value: t.String(),
  priority: t.Optional(Type.Integer({ description: "MX only" })),
  purpose: oneOf(["receiving", "sending"], "what it is needed for"),
  status: checkStatus("pending before it is seen, verified, or failed"),
  reason: t.Optional(t.String({ description: "why it is not verified yet" })),
});
sameKeys<typeof DnsRecord, DomainRecord>(true);

export const Domain = shape("Domain", "A custom domain", {
  id: id(),
  organizationId: t.String(),
  name: t.String({ description: "the domain name" }),
  status: checkStatus("failed when a record failed, verified when all are, pending otherwise"),
  verified: t.Boolean({ description: "every record verified" }),
  receiving: t.Boolean({ description: "MX verified" }),
  sending: t.Boolean({ description: "SPF, DKIM and DMARC verified" }),
  records: t.Array(DnsRecord),
  verifiedAt: t.Optional(timestamp("when it was first verified")),
  createdAt: timestamp("ISO 8601"),
  updatedAt: timestamp("ISO 8601"),
  _id: alias,
});
sameKeys<typeof Domain, DomainShape>(true);

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

/** The failures every route with a JSON body can give besides its own: 400, 413, 422, 503. */
export const bodyFailures = [400, 413, 422, 503] as const;
