// beta dies by kill -9 while alpha is sending it 200 messages; once beta is back, alpha's queue
// retries what beta never acknowledged, and every message is in beta's inbox.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { binaryMissing, deliveryLanesPerDomain, startAppliances, waitFor, type Appliances } from "./appliances";

let world: Appliances;

const count = 200;

describe.skipIf(binaryMissing !== undefined)(`an appliance killed mid-stream${binaryMissing ? ` — skipped: ${binaryMissing}` : ""}`, () => {
  beforeAll(async () => {
    world = await startAppliances();
  }, 30_000);
  afterAll(() => world?.close());

  test(`kill -9 beta while alpha sends it ${count} messages: after the restart all ${count} are there, twice only what the kill left unacknowledged`, async () => {
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

    // The kill lands after a random number of messages were stored, with more in flight.
    const killAfter = 20 + Math.floor(Math.random() * 100);
    const storedBeforeKill = await waitFor(`beta to store ${killAfter} messages`, 30_000, async () => {
      const stored = (await beta.messages(to.id)).length;
      return stored >= killAfter ? stored : undefined;
    });
    await beta.kill();
    const sentIds = await sending;
    expect(storedBeforeKill).toBeLessThan(count);

    const restartedAt = Date.now();
    await beta.start();
    await waitFor(`alpha's ${count} messages to be delivered`, 60_000, async () => {
      const statuses = (await alpha.messages(from.id)).filter((message) => sentIds.includes(message.id)).map((message) => message.status);
      expect(statuses.filter((status) => status !== "sent" && status !== "delivered")).toEqual([]);
      return statuses.every((status) => status === "delivered") ? true : undefined;
    });

    // Everything alpha counts as delivered is in beta's inbox.
    const stored = await beta.messages(to.id);
    expect([...new Set(stored.map((message) => message.subject))].sort()).toEqual(subjects);

    // A second copy is possible only of a message committed in beta's last moments, whose 250 the
    // kill cut off (the duplicate of RFC 1047, never a loss): each of alpha's lanes to beta had
    // at most one such message, and it is among the last that beta stored before the kill.
    const storedAt = (message: any) => Date.parse(message.createdAt);
    const lastStoredBeforeKill = stored.map(storedAt).filter((time) => time < restartedAt).sort((a, b) => b - a);
    const unacknowledgedSince = lastStoredBeforeKill[deliveryLanesPerDomain - 1];
    const copiesStoredAt = new Map<string, number[]>();
    for (const message of stored) copiesStoredAt.set(message.subject, [...(copiesStoredAt.get(message.subject) ?? []), storedAt(message)]);
    const duplicated = [...copiesStoredAt.values()].filter((times) => times.length > 1);
    expect(duplicated.length).toBeLessThanOrEqual(deliveryLanesPerDomain);
    for (const times of duplicated) {
      const [first, second] = times.sort((a, b) => a - b);
      expect({ copies: times.length, firstBeforeKill: first < restartedAt, firstAmongLast: first >= unacknowledgedSince, secondAfterRestart: second >= restartedAt }).toEqual({
        copies: 2,
        firstBeforeKill: true,
        firstAmongLast: true,
        secondAfterRestart: true,
      });
    }

    // The kill made alpha retry: some delivery took more than one try.
    const attempts = await Promise.all(sentIds.map(async (id) => (await alpha.message(from.id, id)).deliveries[0].attempts as number));
    expect(Math.max(...attempts)).toBeGreaterThan(1);
  }, 90_000);

  // Exactly once needs beta to recognise alpha's retry of a message it already committed (same
  // Message-ID in the same inbox) and answer 250 without storing it again; inboxd does not yet.
  test.todo("kill -9 beta mid-stream: every message arrives exactly once");
});
