// The DNS budget of one message's authentication, in front of a resolver whose answers take as
// long as each test says.
import { describe, expect, test } from "bun:test";
import type { DNSResolver } from "mailauth";
import { dnsBudgetOf, withinBudget } from "../../src/smtp/dns-budget";

/** Answers every question after `ms` (never, for Infinity), with the question as its record. */
function answeringAfter(ms: number): DNSResolver {
  return (name, rrtype) => new Promise((resolve) => Number.isFinite(ms) && setTimeout(() => resolve([[`${rrtype} ${name}`]]), ms));
}

/** The outcome of a look-up, and when it came. */
async function timed(lookUp: Promise<unknown>): Promise<{ answer?: unknown; code?: string; ms: number }> {
  const started = performance.now();
  try {
    return { answer: await lookUp, ms: performance.now() - started };
  } catch (error) {
    return { code: (error as { code?: string }).code, ms: performance.now() - started };
  }
}

describe("withinBudget", () => {
  test("look-ups that answer in time pass through; those past the budget, counted from the first, fail as DNS timeouts", async () => {
    const dns = withinBudget(answeringAfter(100), { totalMs: 250, perLookupMs: 200 });
    expect((await timed(dns.resolve("one.test", "TXT"))).answer).toEqual([["TXT one.test"]]);
    expect((await timed(dns.resolve("two.test", "TXT"))).answer).toEqual([["TXT two.test"]]);
    expect(dns.ranOut()).toBe(false);
    // 200 ms of the 250 are gone: the third is cut short, after what was left of the budget.
    const third = await timed(dns.resolve("three.test", "TXT"));
    expect(third.code).toBe("ETIMEOUT");
    expect(third.ms).toBeLessThan(100);
    // The fourth fails at once: well before the 100 ms the resolver takes (a busy machine took 10 ms to say so).
    const fourth = await timed(dns.resolve("four.test", "TXT"));
    expect(fourth.code).toBe("ETIMEOUT");
    expect(fourth.ms).toBeLessThan(50);
    expect(dns.ranOut()).toBe(true);
  });

  test("a look-up that never answers is given up after its share, and leaves the rest of the budget to the next", async () => {
    const dns = withinBudget(answeringAfter(Infinity), { totalMs: 1000, perLookupMs: 50 });
    const unanswered = await timed(dns.resolve("silent.test", "TXT"));
    expect(unanswered.code).toBe("ETIMEOUT");
    expect(unanswered.ms).toBeGreaterThanOrEqual(45);
    expect(unanswered.ms).toBeLessThan(500);
    expect((await timed(dns.resolve("silent.test", "TXT"))).ms).toBeGreaterThanOrEqual(45);
  });

  test("a resolver's own failures come through as they are, and are not the budget's", async () => {
    const gone: DNSResolver = async () => {
      throw Object.assign(new Error("no such name"), { code: "ENOTFOUND" });
    };
    const dns = withinBudget(gone, { totalMs: 1000, perLookupMs: 500 });
    expect((await timed(dns.resolve("gone.test", "TXT"))).code).toBe("ENOTFOUND");
    expect(dns.ranOut()).toBe(false);
  });

  test("the budget is a third of the analysis deadline, a look-up's a quarter of that", () => {
    expect(dnsBudgetOf(30_000)).toEqual({ totalMs: 10_000, perLookupMs: 2_500 });
  });
});
