/** `/v1/inboxes/:inboxId/drafts`: create, list, get, change, delete and send drafts; scheduled send with sendAt. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { createDraft, deleteDraft, getDraft, listDrafts, sendDraftNow, updateDraft } from "../../drafts/service";
import { pageOf } from "../../page";
import { apiKeyGuard } from "../auth";
import { idempotency, idempotentSendRoute } from "../idempotency";
import { labelList } from "../labels";
import { security } from "../openapi";
import { addresses, attachmentsField, text } from "../outgoing-fields";
import { paged, paginationQuery } from "../pagination";
import { bodyFailures, Draft, failures, listOf, Message, rateLimited } from "../schemas";
import { created } from "./messages";

const orNull = <S extends Parameters<typeof t.Union>[0][number]>(schema: S, error: string) => t.Optional(t.Union([schema, t.Null()], { error }));

/** The send body's fields, each optional (null clears one), and the schedule. */
const draftFields = {
  to: t.Optional(addresses("recipients: `name@example.com` or `Name <name@example.com>`")),
  cc: t.Optional(addresses("copy recipients")),
  bcc: t.Optional(addresses("blind copy recipients: in no header")),
  subject: orNull(text("no line breaks"), "must be a string, or null"),
  text: orNull(text("plain text body; \"\" for none"), "must be a string, or null"),
  html: orNull(text("HTML body; \"\" for none"), "must be a string, or null"),
  labels: t.Optional(labelList("labels the sent message keeps")),
  attachments: t.Optional(attachmentsField),
  sendAt: orNull(
    t.String({ description: "ISO 8601 date-time with a time zone, in the future and at most 365 days ahead: the draft is scheduled and goes out then; null unschedules it" }),
    "must be an ISO 8601 date-time string, or null",
  ),
};

const draftBody = t.Object(
  {
    ...draftFields,
    inReplyToMessageId: t.Optional(t.String({ error: "must be a message id", description: "a message of this inbox: the draft answers it in its thread (recipients and subject filled in unless given)" })),
    replyAll: t.Optional(t.Boolean({ error: "must be true or false", description: "with inReplyToMessageId: also to the original's other recipients" })),
  },
  { "x-body-optional": true },
);

/** What only a new draft may say: given to a PATCH, refused rather than ignored, as the client expects it to apply. */
const fixedAtCreation = t.Optional(t.Never({ error: "set when the draft is created; it cannot change", description: "only when the draft is created" }));

export const draftRoutes = (app: App) =>
  new Elysia({ prefix: "/v1/inboxes/:inboxId/drafts", detail: { tags: ["drafts"], security: security.apiKey } })
    .use(apiKeyGuard(app))
    .use(idempotency(app))
    .post(
      "",
      async ({ organizationId, params, body, set }) => {
        const draft = await createDraft(app, organizationId, params.inboxId, body);
        set.status = 201;
        return draft;
      },
      {
        // Every field is optional, so a request without a body means `{}`.
        transform(context) {
          context.body ??= {};
        },
        body: draftBody,
        response: { 201: Draft, ...failures(401, ...bodyFailures, [404, "Inbox not found"]) },
        detail: { summary: "Create a draft: any of the send body's fields, a reply with inReplyToMessageId, scheduled with sendAt (then it must have to, subject and text or html)" },
      },
    )
    .get("", async ({ organizationId, params, query, request, set, server }) => paged(app, { request, set, server }, await listDrafts(app, organizationId, params.inboxId, pageOf(query))), {
      query: paginationQuery,
      response: { 200: listOf(Draft, "Drafts, newest first"), ...failures(401, [404, "Inbox not found"], 422) },
      detail: { summary: "List the drafts of an inbox, newest first, sent and failed ones included" },
    })
    .get("/:draftId", ({ organizationId, params }) => getDraft(app, organizationId, params.inboxId, params.draftId), {
      response: { 200: Draft, ...failures(401, [404, "Inbox or draft not found"]) },
      detail: { summary: "Get a draft" },
    })
    .patch("/:draftId", ({ organizationId, params, body }) => updateDraft(app, organizationId, params.inboxId, params.draftId, body), {
      body: t.Object({ ...draftFields, inReplyToMessageId: fixedAtCreation, replyAll: fixedAtCreation }),
      response: { 200: Draft, ...failures(401, ...bodyFailures, [404, "Inbox or draft not found"], [409, "The draft was sent or is being sent"]) },
      detail: { summary: "Change a draft's fields (attachments replace the old ones; null clears a field; sendAt schedules it, null unschedules it)" },
    })
    .delete("/:draftId", ({ organizationId, params }) => deleteDraft(app, organizationId, params.inboxId, params.draftId), {
      response: { 200: Draft, ...failures(401, [404, "Inbox or draft not found"], [409, "The draft is being sent"]) },
      detail: { summary: "Delete a draft, which cancels its scheduled send; returns it as it was" },
    })
    .post("/:draftId/send", async ({ organizationId, params, set }) => created(set, await sendDraftNow(app, organizationId, params.inboxId, params.draftId)), {
      ...idempotentSendRoute,
      response: {
        201: rateLimited(Message),
        ...failures(401, [404, "Inbox, draft or the message it answers not found"], [409, "The draft was sent or is being sent, or a request with this Idempotency-Key is still running"], [422, "The draft lacks to, subject or text and html: `error` names them"], [429, "Too many requests, please try again later."]),
      },
      detail: { summary: "Send the draft now, as POST …/messages/send (a reply draft as a reply in its thread); rate-limited. The draft stays, status sent with messageId" },
    });
