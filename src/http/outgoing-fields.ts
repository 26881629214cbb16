/**
 * The request fields of what is sent (send, reply, forward, drafts), written once so that a draft
 * accepts each field exactly as a send does.
 */
import { t } from "elysia";
import { maxRecipients } from "../messages/outgoing";

export const text = (description: string) => t.String({ error: "must be a string", description });

// An entry is `ada@example.com` or `Ada Lovelace <ada@example.com>` (the name goes into the header).
const recipient = t.String({ maxLength: 1024, error: "must be an email address such as name@example.com or Name <name@example.com>" });

export const addresses = (description: string) =>
  t.Array(recipient, { maxItems: maxRecipients, error: `must be an array of at most ${maxRecipients} email addresses`, description });

export const toField = t.Array(recipient, {
  minItems: 1,
  maxItems: maxRecipients,
  error: `must be an array of 1 to ${maxRecipients} email addresses`,
  description: "recipients: `name@example.com` or `Name <name@example.com>`",
});

export const attachmentsField = t.Array(
  t.Object({
    content: t.String({ error: "must be a base64 string" }),
    name: t.Optional(t.String({ maxLength: 255, error: "must be a file name of at most 255 characters" })),
    contentType: t.Optional(t.String({ maxLength: 255, error: "must be a media type such as application/pdf" })),
  }),
  { maxItems: 100, error: "must be an array of at most 100 attachments {content, name?, contentType?}" },
);
