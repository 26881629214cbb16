// The look-up cache of inbound authentication, in front of a resolver that counts its questions.
import { describe, expect, test } from "bun:test";
import type { DNSResolver } from "mailauth";
import { cachingResolver } from "../../src/smtp/dns-cache";

function countingResolver(answer: (name: string) => string[][]) {
  const asked: string[] = [];
  const resolve: DNSResolver = async (name, rrtype) => {
    asked.push(`${rrtype} ${name}`);
    return answer(name);
  };
  return { asked, resolve };
}

const failure = (code: string) => Object.assign(new Error(code), { code });

describe("cachingResolver", () => {
  test("answers a repeated question from the cache, case-insensitively, each caller with its own copy", async () => {
    const { asked, resolve } = countingResolver(() => [["v=spf1 -all"]]);
    const cached = cachingResolver(resolve, { ttlMs: 60_000, maxEntries: 10 });
    const first = (await cached("example.test", "TXT")) as string[][];
    first[0].push("changed by the first caller");
    expect(await cached("EXAMPLE.test", "TXT")).toEqual([["v=spf1 -all"]]);
    expect(asked).toEqual(["TXT example.test"]);
  });

  test("keeps 'does not exist' answers, asks again after a temporary failure", async () => {
    let code = "ENOTFOUND";
    const { asked, resolve } = countingResolver(() => {
      throw failure(code);
    });
    const cached = cachingResolver(resolve, { ttlMs: 60_000, maxEntries: 10 });
    for (let i = 0; i < 2; i++) await expect(cached("gone.test", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    code = "ETIMEOUT";
    for (let i = 0; i < 2; i++) await cached("slow.test", "TXT").catch(() => {});
    expect(asked).toEqual(["TXT gone.test", "TXT slow.test", "TXT slow.test"]);
  });

  test("forgets answers after the TTL and holds at most maxEntries", async () => {
    const { asked, resolve } = countingResolver(() => [["x"]]);
    const expiring = cachingResolver(resolve, { ttlMs: 30, maxEntries: 10 });
    await expiring("a.test", "TXT");
    await Bun.sleep(40);
    await expiring("a.test", "TXT");
    const small = cachingResolver(resolve, { ttlMs: 60_000, maxEntries: 2 });
    for (const name of ["b.test", "c.test", "d.test", "b.test"]) await small(name, "TXT");
    expect(asked).toEqual(["TXT a.test", "TXT a.test", "TXT b.test", "TXT c.test", "TXT d.test", "TXT b.test"]);
  });
});
