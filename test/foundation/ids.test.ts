// Ids: prefix, 12 hex digits of milliseconds, 12 of randomness; the ids of one process sort in
// the order they were made, also many within one millisecond.
import { expect, test } from "bun:test";
import { newId } from "../../src/ids";

test("shape: prefix, time, randomness", () => {
  const before = Date.now();
  const id = newId("msg");
  expect(id).toMatch(/^msg_[0-9a-f]{24}$/);
  expect(parseInt(id.slice(4, 16), 16)).toBeGreaterThanOrEqual(before);
});

test("ten thousand ids in a row are distinct and sort in the order they were made", () => {
  const ids = Array.from({ length: 10_000 }, (_, i) => newId(i % 2 ? "dlv" : "att").slice(4));
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.toSorted()).toEqual(ids);
});
