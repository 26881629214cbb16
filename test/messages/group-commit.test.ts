import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { groupCommit } from "../../src/store/group-commit";

test("writes of one event-loop turn share a transaction; one that throws is rolled back alone", async () => {
  const sqlite = new Database(":memory:");
  sqlite.exec("CREATE TABLE t (v TEXT)");
  const batched = groupCommit(sqlite);
  const insert = (v: string) => sqlite.query("INSERT INTO t VALUES (?)").run(v);
  let sawOpenTransaction = true;
  const results = await Promise.allSettled([
    batched(() => {
      insert("a");
      return "first";
    }),
    batched(() => {
      insert("b");
      throw new Error("refused");
    }),
    batched(() => {
      sawOpenTransaction &&= sqlite.inTransaction;
      insert("c");
      return "third";
    }),
  ]);
  expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["first", "refused", "third"]);
  expect(sqlite.query("SELECT v FROM t ORDER BY v").all()).toEqual([{ v: "a" }, { v: "c" }]);
  expect(sawOpenTransaction).toBe(true);
  expect(sqlite.inTransaction).toBe(false);
  // A later turn starts a new batch.
  expect(await batched(() => (insert("d"), "later"))).toBe("later");
});
