/** `/v1/inboxes/:inboxId/messages`: send, reply, forward, list (with search), get, raw source and attachment downloads. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { maxRecipients } from "../../messages/outgoing";
import { rateLimitHeaders } from "../../messages/rate-limit";
import { maxPatternLength } from "../../messages/search";
import { forwardMessage, replyToMessage, sendMessage, type Sent } from "../../messages/send";
import { maxLabels } from "../../messages/labels";
import { updateMessage } from "../../messages/update";
import { messageAnswer, withContentEncoded } from "../../messages/present";
import { getAttachment, getMessage, getMessageSource, listMessages } from "../../messages/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { downloadHeaders, type Downloads } from "../download";
import { idempotency, idempotentSendRoute, keyInUse } from "../idempotency";
import { security } from "../openapi";
import { paged, paginationQuery } from "../pagination";
import { labelList, labelQuery } from "../labels";
import { addresses, attachmentsField, text, toField } from "../outgoing-fields";
import { attachmentContentQuery, bodyFailures, bytes, failures, listOf, Message, MessageSummary, rateLimited } from "../schemas";

const sendBody = t.Object({
  to: toField,
  cc: t.Optional(addresses("copy recipients")),
  bcc: t.Optional(addresses("blind copy recipients: in no header")),
  subject: text("no line breaks"),
  text: text("plain text body; \"\" for none (an HTML-only message)"),
  html: text("HTML body; \"\" for none (a text/plain message)"),
  labels: t.Optional(labelList("labels the message keeps")),
  attachments: t.Optional(attachmentsField),
});

const changeBody = t.Object({
  labels: t.Optional(labelList("the new labels, replacing all the old ones")),
  addLabels: t.Optional(labelList("labels to add (those already there stay once)")),
  removeLabels: t.Optional(labelList("labels to remove, after the additions (those not there are ignored)")),
  read: t.Optional(t.Boolean({ error: "must be true or false", description: "mark the message read (true) or unread (false)" })),
});

const replyBody = t.Object({
  text: text("plain text body; \"\" for none"),
  html: text("HTML body; \"\" for none"),
  replyAll: t.Optional(t.Boolean({ error: "must be true or false", description: "also to the original's other To and Cc recipients, less this inbox" })),
});

const forwardRequestBody = t.Object({
  to: toField,
  cc: t.Optional(addresses("copy recipients")),
  bcc: t.Optional(addresses("blind copy recipients: in no header")),
  text: t.Optional(text("a note above the forwarded message")),
  html: t.Optional(text("the note as HTML")),
});

/** A pattern's slashes and flags beside its 256 characters; a word or phrase gets the same room. */
const maxQueryLength = maxPatternLength + 16;

const listQuery = t.Object({
  ...paginationQuery.properties,
  label: t.Optional(labelQuery("only the messages with this label")),
  query: t.Optional(t.String({ maxLength: maxQueryLength, error: `a search is at most ${maxQueryLength} characters`, description: "a word or phrase (case-insensitive, in subject, text or sender), or /pattern/flags (RE2 syntax; flags i, m, s)" })),
});

/** 201 with the rate-limit headers of the send. */
export function created(set: { status?: number | string; headers: Record<string, string | number> }, sent: Sent) {
  set.status = 201;
  Object.assign(set.headers, rateLimitHeaders(sent.rateLimit));
  return withContentEncoded(sent.message);
}

export const messageRoutes = (app: App, serve: Downloads) =>
  new Elysia({ prefix: "/v1/inboxes/:inboxId/messages", detail: { tags: ["messages"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .use(idempotency(app))
    .post("/send", async ({ organizationId, params, body, set }) => created(set, await sendMessage(app, organizationId, params.inboxId, body)), {
      ...idempotentSendRoute,
      body: sendBody,
      response: { 201: rateLimited(Message), ...failures(401, ...bodyFailures, [404, "Inbox not found"], keyInUse, [429, "Too many requests, please try again later."]) },
      detail: { summary: `Send a new message in a new thread (at most ${maxRecipients} recipients in all); rate-limited` },
    })
    .post("/:messageId/reply", async ({ organizationId, params, body, set }) => created(set, await replyToMessage(app, organizationId, params.inboxId, params.messageId, body)), {
      ...idempotentSendRoute,
      body: replyBody,
      response: { 201: rateLimited(Message), ...failures(401, ...bodyFailures, [404, "Inbox or message not found"], keyInUse, [429, "Too many requests, please try again later."]) },
      detail: { summary: "Reply in the message's thread, to its sender (or to its recipients for a message the inbox sent; with replyAll, also to its other recipients); rate-limited" },
    })
    .post("/:messageId/forward", async ({ organizationId, params, body, set }) => created(set, await forwardMessage(app, organizationId, params.inboxId, params.messageId, body)), {
      ...idempotentSendRoute,
      body: forwardRequestBody,
      response: { 201: rateLimited(Message), ...failures(401, ...bodyFailures, [404, "Inbox or message not found"], keyInUse, [429, "Too many requests, please try again later."]) },
      detail: { summary: "Forward the message, its attachments included, with an optional note, as a new message in a new thread (subject Fwd: ...); rate-limited" },
    })
    .get("", async ({ organizationId, params, query, request, set, server }) => paged(app, { request, set, server }, await listMessages(app, organizationId, params.inboxId, { ...pageOf(query), query: query.query, label: query.label })), {
      query: listQuery,
      response: {
        200: listOf(MessageSummary, "Messages, newest first"),
        ...failures(401, [404, "Inbox not found"], [422, "A field fails validation, or the pattern is invalid or too costly: `error` says which"], [429, "Too many searches at once in this organization: retry shortly"]),
      },
      detail: { summary: "List messages newest first, optionally filtered by query or by label" },
    })
    .get(
      "/:messageId",
      async ({ organizationId, caller, params, query }) =>
        serve.json(caller, messageAnswer(await getMessage(app, organizationId, params.inboxId, params.messageId, query.attachmentContent !== "false"))),
      {
        query: attachmentContentQuery,
        response: { 200: Message, ...failures(401, [404, "Message not found"], 422, [429, "Too many large downloads in flight for this organization"]) },
        detail: { summary: "Get a message with every field (attachmentContent=false: its attachments without their content)" },
      },
    )
    // The whole message again, as a large answer like the get's: each one was the message with its
    // attachments in one buffer, at no organization's limit (48 at once: 1.9 GB).
    .patch("/:messageId", async ({ organizationId, caller, params, body }) => serve.json(caller, messageAnswer(await updateMessage(app, organizationId, params.inboxId, params.messageId, body))), {
      body: changeBody,
      response: {
        200: Message,
        ...failures(401, ...bodyFailures, [404, "Message not found"], [429, "Too many large downloads in flight for this organization: the change is made; the same request again (it changes nothing more) answers the message"]),
      },
      detail: {
        summary: `Change a message's labels: replace them (labels) or add and remove some (addLabels, removeLabels), at most ${maxLabels} in all; and mark it read or unread (read); no event is emitted`,
      },
    })
    .get(
      "/:messageId/raw",
      async ({ organizationId, caller, params }) =>
        serve.file(caller, await getMessageSource(app, organizationId, params.inboxId, params.messageId), downloadHeaders(`${params.messageId}.eml`, "message/rfc822")),
      {
        response: { 200: bytes("message/rfc822", "The RFC 5322 source"), ...failures(401, [404, "Message not found"], [429, "Too many large downloads in flight for this organization"]) },
        detail: { summary: "The message's RFC 5322 source (message/rfc822), as sent or as received with our trace headers; a download ({messageId}.eml), like an attachment's" },
      },
    )
    .get(
      "/:messageId/attachments/:attachmentId",
      async ({ organizationId, caller, params }) => {
        const attachment = await getAttachment(app, organizationId, params.inboxId, params.messageId, params.attachmentId);
        return serve.file(caller, attachment.content, downloadHeaders(attachment.name ?? undefined, attachment.contentType ?? undefined));
      },
      {
        response: { 200: bytes("*/*", "The attachment's bytes, as its own media type (application/octet-stream when it has none)"), ...failures(401, [404, "Message or attachment not found"], [429, "Too many large downloads in flight for this organization"]) },
        detail: { summary: "One attachment's bytes (its id is in the message's attachments), always as a download: Content-Disposition attachment, nosniff, CSP sandbox" },
      },
    );
