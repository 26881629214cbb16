/**
 * Recording what tries came back with: each attempt's outcome, each delivery's next step
 * (succeeded, retried after its delay, or failed for good), and each webhook's health (a success
 * ends a run of failures; 410 Gone, or 5 days of nothing but failures, disables the webhook).
 * Runs inside the queue's transaction, on its `tx`.
 */
import type { App } from "../app";
import type { AttemptOutcome, ClaimedAttempt, Transaction } from "../store";
import { failingPeriodBeforeDisableMs, failingReason, goneReason, isGone, isSuccess, maxAttempts, retryDelayMs, type TryResult } from "./policy";

export interface Finished {
  attempt: ClaimedAttempt;
  result: TryResult;
  finishedAt: number;
}

export async function recordOutcomes(app: App, tx: Transaction, batch: Finished[]) {
  const { config } = app;
  const attemptsAllowed = maxAttempts(config.webhookRetryDelays);
  const outcomes: AttemptOutcome[] = [];
  for (const [webhookId, group] of groupByWebhook(batch)) {
    // Only tries to the webhook's URL of now say how it fares: a try to the URL it left answered
    // 410 (that endpoint retired) and disabled the webhook at its new one.
    const webhook = await tx.webhooks.find(group[0]!.attempt.organizationId, webhookId);
    const toItsUrl = group.filter(({ attempt }) => attempt.url === webhook?.url);
    if (toItsUrl.length > 0) await updateWebhookHealth(app, tx, webhookId, toItsUrl);
    const enabled = await tx.webhookQueue.isEnabled(webhookId);
    for (const { attempt, result, finishedAt } of group) {
      const success = isSuccess(result);
      const retry = !success && enabled && attempt.attemptNumber < attemptsAllowed;
      const nextAttemptAt = retry ? finishedAt + retryDelayMs(config.webhookRetryDelays, attempt.attemptNumber) : null;
      app.metrics.webhookAttempts.inc({ outcome: success ? "succeeded" : retry ? "retry" : "failed" });
      if (!success) {
        // The URL's host only: its path and query may carry a token of the receiver's.
        app.log.warn("webhook attempt failed", {
          webhookId,
          eventType: attempt.event,
          host: hostOf(attempt.url),
          attempt: attempt.attemptNumber,
          statusCode: result.statusCode,
          error: result.error,
          ...(nextAttemptAt === null ? { gaveUp: enabled ? "attempts exhausted" : "webhook disabled" } : { nextAttemptAt: new Date(nextAttemptAt).toISOString() }),
        });
      }
      outcomes.push({
        attemptId: attempt.id,
        deliveryId: attempt.deliveryId,
        ...result,
        success,
        finishedAt,
        deliveryStatus: success ? "succeeded" : retry ? "pending" : "failed",
        nextAttemptAt,
      });
    }
  }
  await tx.webhookQueue.recordOutcomes(outcomes);
}

async function updateWebhookHealth({ log }: App, tx: Transaction, webhookId: string, outcomes: Finished[]) {
  const now = Math.max(...outcomes.map((o) => o.finishedAt));
  const disable = async (reason: string) => {
    if (await tx.webhooks.disable(webhookId, reason, now)) log.warn("webhook disabled", { webhookId, reason });
  };
  if (outcomes.some((o) => isGone(o.result))) await disable(goneReason);
  if (outcomes.some((o) => isSuccess(o.result))) {
    await tx.webhookQueue.endFailureRun(webhookId);
    return;
  }
  const since = await tx.webhookQueue.extendFailureRun(webhookId, Math.min(...outcomes.map((o) => o.attempt.createdAt)));
  if (since !== undefined && now - since >= failingPeriodBeforeDisableMs) await disable(failingReason(since));
}

function groupByWebhook(batch: Finished[]): Map<string, Finished[]> {
  const groups = new Map<string, Finished[]>();
  for (const finished of batch) {
    const group = groups.get(finished.attempt.webhookId);
    if (group) group.push(finished);
    else groups.set(finished.attempt.webhookId, [finished]);
  }
  return groups;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid URL)";
  }
}
