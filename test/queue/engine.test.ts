// The queue engine with a policy that only records what it is asked to do: when turns come, what
// they may claim, which outcomes they record, and how a stop ends. The outbound and webhook tests
// run the same engine under their real policies.
import { expect, test } from "bun:test";
import type { App } from "../../src/app";
import { Clock } from "../../src/clock";
import { createLogger } from "../../src/log";
import { startQueue, type Claiming, type QueuePolicy } from "../../src/queue/engine";
import { RunningQueues } from "../../src/queue/running";
import { ShutdownDeadline } from "../../src/shutdown";

const newApp = () => ({ clock: new Clock(), log: createLogger("text", "silent"), shutdown: new ShutdownDeadline(5000), queues: new RunningQueues() }) as unknown as App;

/** A policy that logs each turn as `claiming: outcomes`, starts `claims` tries when told, and never sleeps for long on its own. */
function loggingPolicy(overrides: Partial<QueuePolicy<string>> = {}) {
  const log: string[] = [];
  const tries: ((outcome: string) => void)[] = [];
  const state = { claims: 0 };
  const policy: QueuePolicy<string> = {
    batchWindowMs: 20,
    idleMs: 60_000,
    async turn(outcomes, _now, claiming) {
      log.push(turnLine(claiming, outcomes));
    },
    startTries() {
      const started = Array.from({ length: state.claims }, () => new Promise<string>((resolve) => tries.push(resolve)));
      state.claims = 0;
      return started;
    },
    recordAtOnce: () => false,
    nextDueAfter: async () => undefined,
    async release() {
      log.push("release");
    },
    close() {
      log.push("close");
    },
    ...overrides,
  };
  return { policy, log, tries, state };
}

const turnLine = (claiming: Claiming, outcomes: string[]) => (outcomes.length > 0 ? `${claiming}: ${outcomes.join(" ")}` : claiming);

async function until(what: string, done: () => boolean, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

test("asleep until the next row falls due, looked for after the last look; then a turn that claims all due, and no other", async () => {
  const app = newApp();
  const turnsAt: number[] = [];
  const asked: number[] = [];
  const dueAt = app.clock.now() + 300;
  const dueTimes = [dueAt];
  const { policy, log } = loggingPolicy({
    async turn(_outcomes, now, claiming) {
      log.push(claiming);
      turnsAt.push(now);
    },
    nextDueAfter: async (after) => {
      asked.push(after);
      return dueTimes.shift();
    },
  });
  const queue = startQueue(app, "outbound", policy);
  try {
    await Bun.sleep(150);
    expect(log).toEqual(["all due"]);
    await until("the turn at the due time", () => log.length === 2);
    expect(log).toEqual(["all due", "all due"]);
    expect(turnsAt[1]!).toBeGreaterThanOrEqual(dueAt);
    expect(asked).toEqual([turnsAt[0]!, turnsAt[1]!]);
    await Bun.sleep(300);
    expect(log).toHaveLength(2);
  } finally {
    await queue.stop();
  }
});

test("resumed once before the first turn; a wake through the App turns at once and claims all due; a stopped queue is not woken", async () => {
  const app = newApp();
  const { policy, log } = loggingPolicy({
    async resume() {
      log.push("resume");
    },
  });
  const queue = startQueue(app, "webhooks", policy);
  await until("the first turn", () => log.length === 2);
  app.queues.wake("webhooks");
  await until("the wake's turn", () => log.length === 3);
  await queue.stop();
  app.queues.wake("webhooks");
  await Bun.sleep(20);
  expect(log).toEqual(["resume", "all due", "all due", "release", "none", "close"]);
});

test("outcomes wait for one turn, which only tops up; runDueNow resolves once every outcome is recorded", async () => {
  const app = newApp();
  const { policy, log, tries, state } = loggingPolicy();
  policy.turn = async (outcomes, _now, claiming) => {
    log.push(turnLine(claiming, outcomes));
    if (log.length === 1) state.claims = 2;
  };
  const queue = startQueue(app, "outbound", policy);
  try {
    const done = queue.runDueNow();
    await until("two tries", () => tries.length === 2);
    tries[0]!("first");
    await Bun.sleep(5);
    tries[1]!("second");
    await done;
    expect(log).toEqual(["all due", "top up: first second"]);
  } finally {
    await queue.stop();
  }
});

/** A logging policy whose first `failures` turns fail, as with the disk full. */
function failingPolicy(failures: number) {
  const logging = loggingPolicy();
  logging.policy.turn = async (_outcomes, _now, claiming) => {
    logging.log.push(claiming);
    if (failures-- > 0) throw new Error("disk full");
  };
  return logging;
}

test("a failed turn is made again soon, with the look it was to make, and not in a loop", async () => {
  const app = newApp();
  const { policy, log } = failingPolicy(1);
  const queue = startQueue(app, "outbound", policy);
  try {
    await until("the second try", () => log.length === 2);
    expect(log).toEqual(["all due", "all due"]);
    await Bun.sleep(300);
    expect(log).toHaveLength(2);
  } finally {
    await queue.stop();
  }
});

test("turns that keep failing are logged once (then once a minute), and the first to succeed after them says how many failed", async () => {
  const lines: { level: string; event: string; failedTurns?: number }[] = [];
  const app = { ...newApp(), log: createLogger("json", "info", (line) => lines.push(JSON.parse(line))) } as unknown as App;
  const { policy, log } = failingPolicy(6);
  const queue = startQueue(app, "outbound", policy);
  try {
    await until("the turn after six failed ones", () => log.length === 7, 10_000);
    expect(lines.map(({ level, event, failedTurns }) => [level, event, failedTurns])).toEqual([
      ["error", "outbound queue turn failed", undefined],
      ["info", "outbound queue turns succeed again", 6],
    ]);
  } finally {
    await queue.stop();
  }
});

test("a turn that fails with outcomes records each alone: one that cannot be recorded is set aside, holds up no other try, and is tried alone again at each look until it is recorded", async () => {
  const app = newApp();
  let refusesPoison = true;
  const { policy, log, tries, state } = loggingPolicy();
  policy.turn = async (outcomes, _now, claiming) => {
    if (refusesPoison && outcomes.includes("poison")) {
      log.push(`refused ${turnLine(claiming, outcomes)}`);
      throw new Error("value too long for type character varying(100)");
    }
    log.push(turnLine(claiming, outcomes));
    if (log.length === 1) state.claims = 3;
  };
  const queue = startQueue(app, "webhooks", policy);
  try {
    await until("three tries", () => tries.length === 3);
    tries[0]!("first");
    tries[1]!("poison");
    tries[2]!("second");
    await until("the outcomes recorded one by one", () => log.includes("none: second"));
    expect(log).toEqual(["all due", "refused top up: first poison second", "none: first", "refused none: poison", "none: second", "top up"].slice(0, log.length));
    // The queue goes on: a look claims as before, and tries the set-aside outcome alone first.
    await queue.runDueNow();
    expect(log.slice(-2)).toEqual(["refused none: poison", "all due"]);
    refusesPoison = false;
    await queue.runDueNow();
    expect(log.slice(-2)).toEqual(["none: poison", "all due"]);
    await queue.runDueNow();
    expect(log.slice(-1)).toEqual(["all due"]);
  } finally {
    await queue.stop();
  }
});

test("outcomes set aside that keep failing are logged once (then once a minute), however many and however many looks; their recording is said once", async () => {
  const lines: { level: string; event: string; failedTries?: number }[] = [];
  const app = { ...newApp(), log: createLogger("json", "info", (line) => lines.push(JSON.parse(line))) } as unknown as App;
  let diskFull = true;
  const { policy, log, tries, state } = loggingPolicy();
  policy.turn = async (outcomes, _now, claiming) => {
    if (diskFull && outcomes.length > 0) throw new Error("database or disk is full");
    log.push(turnLine(claiming, outcomes));
    if (log.length === 1) state.claims = 3;
  };
  const queue = startQueue(app, "inbound", policy);
  try {
    await until("three tries", () => tries.length === 3);
    for (const [n, resolve] of tries.entries()) resolve(`accepted-${n}`);
    await until("the outcomes set aside", () => lines.length > 0);
    for (let look = 0; look < 5; look++) await queue.runDueNow();
    diskFull = false;
    await queue.runDueNow();
    expect(log.slice(-1)).toEqual(["all due"]);
    expect(lines.map(({ level, event }) => [level, event])).toEqual([
      ["error", "inbound queue turn failed; its outcomes are recorded one by one"],
      ["error", "inbound queue: a try's outcome could not be recorded, even alone; it is set aside and tried again at each look for due rows"],
      ["info", "inbound queue turns succeed again"],
      ["info", "inbound queue: the outcomes set aside are recorded"],
    ]);
    // Each of the three failed at least once a look.
    expect(lines[3]!.failedTries).toBeGreaterThanOrEqual(3 * 5);
  } finally {
    await queue.stop();
  }
});

test("stop: gives back the claims not started, waits for the tries in flight, records them in a last turn that claims nothing", async () => {
  const app = newApp();
  const { policy, log, tries, state } = loggingPolicy();
  state.claims = 1;
  const queue = startQueue(app, "outbound", policy);
  await until("the try", () => tries.length === 1);
  const stopped = queue.stop();
  await Bun.sleep(20);
  expect(log).toEqual(["all due", "release"]);
  tries[0]!("late");
  await stopped;
  expect(log).toEqual(["all due", "release", "none: late", "close"]);
});
