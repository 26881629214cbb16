// The console's dates as mail clients show them in a list: the time today, the day and month this
// year, the full date before (src/console/ui/lib/format.ts); and display names beside addresses.
import { describe, expect, test } from "bun:test";
import { formatTime, nameAndAddress } from "../../src/console/ui/lib/format";

const now = new Date(2026, 10, 25, 15, 30);

describe("formatTime", () => {
  test("today: the time of day only, from midnight on", () => {
    const morning = new Date(2026, 10, 25, 9, 5);
    expect(formatTime(morning.toISOString(), now)).toBe(new Intl.DateTimeFormat(undefined, { timeStyle: "short" }).format(morning));
    expect(formatTime(new Date(2026, 10, 25, 0, 0).toISOString(), now)).not.toMatch(/2026|Nov/);
  });

  test("earlier this year, yesterday included: day and month, no year", () => {
    for (const date of [new Date(2026, 10, 24, 23, 59), new Date(2026, 0, 1, 0, 0)]) {
      expect(formatTime(date.toISOString(), now)).toBe(new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short" }).format(date));
      expect(formatTime(date.toISOString(), now)).not.toContain("2026");
    }
  });

  test("last year and before: the full date", () => {
    const lastYear = new Date(2025, 11, 31, 23, 59);
    expect(formatTime(lastYear.toISOString(), now)).toBe(new Intl.DateTimeFormat(undefined, { dateStyle: "medium" }).format(lastYear));
    expect(formatTime(lastYear.toISOString(), now)).toContain("2025");
  });
});

test("nameAndAddress: the display name with the address in angle brackets, or the bare address", () => {
  expect(nameAndAddress("bank@acme.test", "Acme Bank")).toBe("Acme Bank <bank@acme.test>");
  expect(nameAndAddress("bank@acme.test")).toBe("bank@acme.test");
});
