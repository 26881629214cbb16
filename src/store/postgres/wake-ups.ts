/**
 * Wake-ups between nodes: a commit that queued work (a send on node A) reaches the queue of every
 * node (a free sender on node B) through LISTEN/NOTIFY. Triggers of
 * migrations/postgres/0002_delivery.sql notify `inboxd_wake` with the queue's name (or `events`)
 * when rows are inserted, and PostgreSQL delivers it at commit, once per transaction and name.
 * A notification lost while the listening connection reconnects costs only time: each queue also
 * sleeps until its next row falls due, and no longer than its idle time.
 */
import type { SQL as BunSql } from "bun";
import type { Logger } from "../../log";
import type { QueueName } from "../../queue/running";
import type { RunningPart } from "../../running-part";

export const WAKE_CHANNEL = "inboxd_wake";

/** What a notification names: a queue with work, or `events` (recorded: the event streams read them). */
export type WakeUp = QueueName | "events";

const WAKE_UPS: ReadonlySet<string> = new Set<WakeUp>(["outbound", "webhooks", "inbound", "drafts", "events"]);

export function listenForWakeUps(client: BunSql, onWake: (what: WakeUp) => void, log: Logger): RunningPart {
  const listening = client.listen(WAKE_CHANNEL, (payload) => {
    if (WAKE_UPS.has(payload)) onWake(payload as WakeUp);
  });
  listening.catch((error: unknown) => log.error("listening for other nodes' wake-ups failed; queues find their work when it falls due", { error }));
  return {
    name: "wake-ups",
    async stop() {
      await (await listening.catch(() => undefined))?.unlisten();
    },
  };
}
