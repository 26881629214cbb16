// beta dies by kill -9 while alpha is sending it 200 messages; once beta is back, alpha's queue
// retries what beta never acknowledged, and every message is in beta's inbox.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { binaryMissing, startAppliances, waitFor, type Appliances } from "./appliances";

let world: Appliances;

const count = 200;

describe.skipIf(binaryMissing !== undefined)(`an appliance killed mid-stream${binaryMissing ? ` — skipped: ${binaryMissing}` : ""}`, () => {
  beforeAll(async () => {
    world = await startAppliances();
  }, 30_000);
  afterAll(() => world?.close());

  test(`kill -9 beta while alpha sends it ${count} messages: after the restart all ${count} are there exactly once`, async () => {
    const { alpha, beta } = world;
    const from = alpha.account.inbox;
    const to = beta.account.inbox;
    const subjects = Array.from({ length: count }, (_, i) => `Batch ${String(i).padStart(3, "0")}`);

    // The API calls go out 10 at a time, as a busy client's would; delivery starts with the first.
    const sending = (async () => {
      const ids: string[] = [];
      for (let i = 0; i < count; i += 10) {
        const batch = subjects.slice(i, i + 10).map((subject) => alpha.send(from.id, { to: [to.email], subject, text: `${subject}.`, html: `<p>${subject}.</p>` }));
        ids.push(...(await Promise.all(batch)).map((message) => message.id));
      }
      return ids;
    })();

    // The kill lands after a random number of messages were delivered (alpha saw beta's 250), with
    // more in flight. Counted at alpha: beta accepts before it analyses and stores, and on a fast
    // machine it had accepted all 200 before it had stored the number waited for.
    const killAfter = 20 + Math.floor(Math.random() * 100);
    const deliveredBeforeKill = await waitFor(`alpha to deliver ${killAfter} messages`, 30_000, async () => {
      const delivered = (await alpha.messages(from.id)).filter((message) => message.status === "delivered").length;
      return delivered >= killAfter ? delivered : undefined;
    });
    await beta.kill();
    const sentIds = await sending;
    expect(deliveredBeforeKill).toBeLessThan(count);

    await beta.start();
    await waitFor(`alpha's ${count} messages to be delivered`, 60_000, async () => {
      const statuses = (await alpha.messages(from.id)).filter((message) => sentIds.includes(message.id)).map((message) => message.status);
      expect(statuses.filter((status) => status !== "sent" && status !== "delivered")).toEqual([]);
      return statuses.every((status) => status === "delivered") ? true : undefined;
    });

    // Everything alpha counts as delivered is in beta's inbox, exactly once: a message whose 250
    // the kill cut off comes again after the restart, and beta recognises its Message-ID. Beta
    // stores what it accepted once analysed (its inbound queue), so the inbox fills up to the count.
    const stored = await waitFor(`beta to store all ${count}`, 30_000, async () => {
      const messages = await beta.messages(to.id);
      return messages.length >= count ? messages : undefined;
    });
    expect(stored.map((message) => message.subject).sort()).toEqual(subjects);

    // The kill made alpha retry: some delivery took more than one try.
    const attempts = await Promise.all(sentIds.map(async (id) => (await alpha.message(from.id, id)).deliveries[0].attempts as number));
    expect(Math.max(...attempts)).toBeGreaterThan(1);
  }, 90_000);
});
