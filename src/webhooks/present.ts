/** The shapes of webhooks and webhook attempts as the API shows them. */
import { iso } from "../clock";
import { resource } from "../present";
import type { AttemptWithEvent, WebhookRecord } from "../store";
import { envelopeBody } from "./envelope";

/** Never the secret: it is shown once, on creation. */
export const presentWebhook = (row: WebhookRecord) =>
  resource({
    id: row.id,
    organizationId: row.organizationId,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });

/**
 * `payload` is the body that was sent (rebuilt from the event, byte for byte the same).
 * `nextAttemptAt`: when the attempt's delivery is tried next (after a failure, the retry of the
 * schedule; while the try is under way, when it is made again should it never report back); left
 * out once the delivery finished: it succeeded, its tries ran out, or its webhook was disabled.
 */
export const presentAttempt = ({ attempt, event, nextAttemptAt }: AttemptWithEvent) =>
  resource({
    id: attempt.id,
    webhookId: attempt.webhookId,
    eventId: event.id,
    event: attempt.event,
    payload: JSON.parse(envelopeBody(event)) as Record<string, unknown>,
    url: attempt.url,
    statusCode: attempt.statusCode,
    response: attempt.response,
    success: attempt.success,
    error: attempt.error,
    attemptNumber: attempt.attemptNumber,
    createdAt: iso(attempt.createdAt),
    finishedAt: attempt.finishedAt === null ? undefined : iso(attempt.finishedAt),
    nextAttemptAt: nextAttemptAt === null ? undefined : iso(nextAttemptAt),
  });

export type Webhook = ReturnType<typeof presentWebhook>;
export type WebhookAttempt = ReturnType<typeof presentAttempt>;
