/** `/v1/inboxes/:inboxId/messages`: send, reply, list (with search), get, raw source and attachment downloads. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { maxRecipients } from "../../messages/outgoing";
import { rateLimitHeaders } from "../../messages/rate-limit";
import { maxPatternLength } from "../../messages/search";
import { replyToMessage, sendMessage, type Sent } from "../../messages/send";
import { getAttachment, getMessage, getMessageSource, listMessages } from "../../messages/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { downloadHeaders } from "../download";
import { paginationQuery } from "../pagination";

const text = (description: string) => t.String({ error: "must be a string", description });
const addresses = (description: string) =>
  t.Array(t.String({ maxLength: 1024, error: "must be an email address" }), { maxItems: maxRecipients, error: `must be an array of at most ${maxRecipients} email addresses`, description });

const sendBody = t.Object({
  to: t.Array(t.String({ maxLength: 1024, error: "must be an email address" }), {
    minItems: 1,
    maxItems: maxRecipients,
    error: `must be an array of 1 to ${maxRecipients} email addresses`,
  }),
  cc: t.Optional(addresses("copy recipients")),
  bcc: t.Optional(addresses("blind copy recipients: in no header")),
  subject: text("no line breaks"),
  text: text("plain text body"),
  html: text("HTML body"),
  labels: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 50, error: "must be an array of at most 50 labels of 1 to 100 characters" })),
  attachments: t.Optional(
    t.Array(
      t.Object({
        content: t.String({ error: "must be a base64 string" }),
        name: t.Optional(t.String({ maxLength: 255, error: "must be a file name of at most 255 characters" })),
        contentType: t.Optional(t.String({ maxLength: 255, error: "must be a media type such as application/pdf" })),
      }),
      { maxItems: 100, error: "must be an array of at most 100 attachments {content, name?, contentType?}" },
    ),
  ),
});

const replyBody = t.Object({ text: text("plain text body"), html: text("HTML body") });

const listQuery = t.Object({
  ...paginationQuery.properties,
  query: t.Optional(t.String({ maxLength: maxPatternLength + 16, description: "a word or phrase (case-insensitive, in subject, text or sender), or /pattern/flags (RE2 syntax; flags i, m, s)" })),
});

/** 201 with the rate-limit headers of the send. */
function created(set: { status?: number | string; headers: Record<string, string | number> }, sent: Sent) {
  set.status = 201;
  Object.assign(set.headers, rateLimitHeaders(sent.rateLimit));
  return sent.message;
}

export const messageRoutes = (app: App) =>
  new Elysia({ prefix: "/v1/inboxes/:inboxId/messages", detail: { tags: ["messages"], security: [{ bearer: [] }] } })
    .use(apiKeyGuard(app))
    .post("/send", async ({ organizationId, params, body, set }) => created(set, await sendMessage(app, organizationId, params.inboxId, body)), {
      body: sendBody,
      detail: { summary: `Send a new message in a new thread (at most ${maxRecipients} recipients in all); rate-limited` },
    })
    .post("/:messageId/reply", async ({ organizationId, params, body, set }) => created(set, await replyToMessage(app, organizationId, params.inboxId, params.messageId, body)), {
      body: replyBody,
      detail: { summary: "Reply in the message's thread, to its sender (or to its recipients for a message the inbox sent); rate-limited" },
    })
    .get("", ({ organizationId, params, query }) => listMessages(app, organizationId, params.inboxId, { ...pageOf(query), query: query.query }), {
      query: listQuery,
      detail: { summary: "List messages newest first, optionally filtered by query" },
    })
    .get("/:messageId", ({ organizationId, params }) => getMessage(app, organizationId, params.inboxId, params.messageId), {
      detail: { summary: "Get a message with every field" },
    })
    .get(
      "/:messageId/raw",
      async ({ organizationId, params }) =>
        new Response(await getMessageSource(app, organizationId, params.inboxId, params.messageId), { headers: { "content-type": "message/rfc822" } }),
      { detail: { summary: "The message's RFC 5322 source (message/rfc822), as sent or as received with our trace headers" } },
    )
    .get(
      "/:messageId/attachments/:attachmentId",
      async ({ organizationId, params }) => {
        const attachment = await getAttachment(app, organizationId, params.inboxId, params.messageId, params.attachmentId);
        return new Response(attachment.content, { headers: downloadHeaders(attachment.name ?? undefined, attachment.contentType ?? undefined) });
      },
      { detail: { summary: "One attachment's bytes (its id is in the message's attachments), always as a download: Content-Disposition attachment, nosniff, CSP sandbox" } },
    );
