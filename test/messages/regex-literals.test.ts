import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { RE2JS } from "re2js";
import { literalRequirement } from "../../src/messages/regex-literals";
import { ftsQuery } from "../../src/store/sqlite/fts-query";

/** The FTS5 query a search runs for a pattern: its literal requirement, as the SQLite engine writes it. */
const candidateQuery = (p: string) => {
  const r = literalRequirement(p);
  return r && ftsQuery(r);
};

describe("candidateQuery", () => {
  test.each([
    ["invoice", '"invoice"'],
    ["inv.ice", '("inv" AND "ice")'],
    ["inv[o0]ice \\d+ due", '(("invoice " OR "inv0ice ") AND " due")'],
    ["colou?r (red|blue)", '("colour red" OR "colour blue" OR "color red" OR "color blue")'],
    ["invoice #(12|34)\\d{4}", '("invoice #12" OR "invoice #34")'],
    ["[_.-]com", '("_com" OR ".com" OR "-com")'],
    ["abc|def", '("abc" OR "def")'],
    ["(foo|bar)baz", '("foobaz" OR "barbaz")'],
    ["(foo|bar).baz", '(("foo" OR "bar") AND "baz")'],
    ["abc+d", '"abc"'],
    ["a{2}bcd", '"abcd"'],
    ["x*yzw", '"yzw"'],
    ["a(?:bc)?def", '("abcdef" OR "adef")'],
    ["a(?:bc)*def", '"def"'],
    ["\\.com$", '".com"'],
    ['say "hi"', '"say ""hi"""'],
    ["(?i)hello", '"hello"'],
    ["ab[cd](?i)?ef", '("abcef" OR "abdef" OR "abef")'],
    ["abc(?i)*def", '"def"'],
    ["(?P<name>abc)", '"abc"'],
    ["\\101xyz", '"xyz"'],
    ["a{,3}bc", '"a{,3}bc"'],
    ["[]abc]def", '"def"'],
    ["😀😀😀😀*", '"😀😀😀"'],
    // A literal past 12 characters is looked up by its start and its end: the index's cost follows a phrase's length.
    ["quarterly invoice numbers", '("quarterly in" AND "oice numbers")'],
    ["(quarterly invoices|yearly invoice total)", '(("quarterly in" AND "rly invoices") OR ("yearly invoi" AND "nvoice total"))'],
  ])("%s → %s", (pattern, query) => {
    expect(candidateQuery(pattern)).toBe(query);
  });

  test.each([["ab"], ["(a+)+$"], ["abc|de"], ["(abc)*"], ["\\Qabc\\E"], ["\\x41bc"], ["\\p{Greek}+"], ["[abc]{3}"], ["(|abc)"]])("%s narrows nothing", (pattern) => {
    expect(candidateQuery(pattern)).toBeNull();
  });

  // Every text the expression matches must be a candidate: checked against the real trigram index
  // on random patterns and texts (a fixed seed keeps failures reproducible).
  test("candidates are a superset of the matches (randomised against SQLite's trigram index)", () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = ["a", "b", "c", "ab", "abc", "bca", "A", ".", "(", ")", "|", "*", "+", "?", "{2}", "{0,1}", "{1,}", "{2,3}", "{0}", "??", "[ab]", "[^c]", "[a.]", "[a-c]", "\\.", "(?:", "(?i)", "(?i:", "^", "$", "\\d", "x", "\\b", "\\x61"];
    const db = new Database(":memory:");
    db.exec("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'trigram case_sensitive 0')");
    const texts = Array.from({ length: 400 }, () => Array.from({ length: 3 + random(12) }, () => "abcABx.1 "[random(9)]).join(""));
    texts.forEach((text, i) => db.query("INSERT INTO t (rowid, body) VALUES (?, ?)").run(i + 1, text));
    let narrowed = 0;
    for (let round = 0; round < 3000; round++) {
      const pattern = Array.from({ length: 1 + random(8) }, () => pieces[random(pieces.length)]).join("");
      let regex: RE2JS;
      try {
        regex = RE2JS.compile(pattern);
      } catch {
        continue;
      }
      const query = candidateQuery(pattern);
      if (query === null) continue;
      narrowed++;
      const candidates = new Set(db.query<{ rowid: number }, [string]>("SELECT rowid FROM t WHERE t MATCH ?").all(query).map((r) => r.rowid));
      const missed = texts.filter((text, i) => regex.test(text) && !candidates.has(i + 1));
      expect({ pattern, query, missed }).toEqual({ pattern, query, missed: [] });
    }
    expect(narrowed).toBeGreaterThan(100);
  });
});
