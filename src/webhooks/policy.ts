/**
 * What a try's outcome means: success, retry later, give up, or disable the webhook. Schedule A of
 * the service description: attempt 1 at once, then one more after each delay of
 * INBOXD_WEBHOOK_RETRY_DELAYS (1 min, 5 min, 30 min, 2 h); after the last failure the delivery is
 * discarded (kept, marked failed).
 */

/** A webhook whose tries have done nothing but fail for this long is disabled. */
export const failingPeriodBeforeDisableMs = 5 * 24 * 60 * 60 * 1000;

export const goneReason = "The endpoint answered 410 Gone";
export const failingReason = (since: number) => `Every delivery failed for 5 days (since ${new Date(since).toISOString()})`;
export const disabledByUserReason = "Disabled through the API";
/** What an attempt whose outcome never came back says (its node stopped or died mid-try). */
export const unfinishedAttemptError = "inboxd stopped before the outcome of this try was recorded";

export const maxAttempts = (retryDelaysSeconds: number[]) => retryDelaysSeconds.length + 1;

/** How long after try `attemptNumber` failed the next one goes out. */
export const retryDelayMs = (retryDelaysSeconds: number[], attemptNumber: number) =>
  retryDelaysSeconds[Math.min(attemptNumber, retryDelaysSeconds.length) - 1]! * 1000;

/** Of a delivery: pending while it has tries to come, then succeeded, or failed once they ran out or its webhook was disabled. */
export type WebhookDeliveryStatus = "pending" | "succeeded" | "failed";

/** The answer to one try: a status when the endpoint answered, an error when it did not or was refused. */
export interface TryResult {
  statusCode: number | null;
  response: string | null;
  error: string | null;
}

/** Only a 2xx is a success; a redirect is a failure, never followed. */
export const isSuccess = (result: TryResult) => result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;

/** 410 Gone: the receiver says the endpoint is gone for good, so it is disabled at once. */
export const isGone = (result: TryResult) => result.statusCode === 410;
