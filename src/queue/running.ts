/**
 * The queues running on an App. Code that queues work wakes its queue through the App, so that it
 * needs neither the queue's module (which imports it in turn) nor to know whether the queue runs
 * in this process at all (the App of a command line tool runs none).
 */
import type { RunningPart } from "../running-part";

export type QueueName = "outbound" | "webhooks" | "inbound" | "drafts";

export interface Queue extends RunningPart {
  name: QueueName;
  /** Work was queued: look for it now rather than when the next row falls due. */
  wake(): void;
  /** Sends everything due now (by the App's clock) and resolves once every outcome is recorded. */
  runDueNow(): Promise<void>;
  /**
   * What `owner`'s rows are sent to changed (a webhook deleted, disabled or given another URL):
   * its claims not started yet wait for a turn that reads the change, which gives back those no
   * longer wanted.
   */
  reconsider(owner: string): void;
}

export class RunningQueues {
  private readonly running = new Map<QueueName, Queue>();

  /** Work was queued for `name`: its queue, if one runs, looks for it at once. */
  wake(name: QueueName) {
    this.running.get(name)?.wake();
  }

  /** `owner`'s rows on `name` changed: see Queue.reconsider. */
  reconsider(name: QueueName, owner: string) {
    this.running.get(name)?.reconsider(owner);
  }

  /** Runs what is due on `name` now, if its queue runs here, and resolves once every outcome is recorded (tests, shutdown). */
  async runDueNow(name: QueueName): Promise<void> {
    await this.running.get(name)?.runDueNow();
  }

  add(queue: Queue) {
    this.running.set(queue.name, queue);
  }

  remove(queue: Queue) {
    if (this.running.get(queue.name) === queue) this.running.delete(queue.name);
  }
}
