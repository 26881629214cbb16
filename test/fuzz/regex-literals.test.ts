// Fuzz target: literal extraction from RE2 patterns (src/messages/regex-literals.ts). A search
// pattern is a stranger's text; the FTS5 query built from it preselects the messages re2js then
// checks, so a query that leaves out a text the pattern matches loses a search result, and one
// SQLite cannot read turns a search into a server error.
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { RE2JS } from "re2js";
import { literalRequirement } from "../../src/messages/regex-literals";
import { ftsQuery } from "../../src/store/sqlite/fts-query";
import { fuzz, testTimeout, withinTime } from "./budget";

/** The FTS5 query a search runs for a pattern: its literal requirement, as the SQLite engine writes it. */
const candidateQuery = (p: string) => {
  const r = literalRequirement(p);
  return r && ftsQuery(r);
};

// The index exactly as migration 0040 declares it, so its case folding is the one searched.
const db = new Database(":memory:");
db.exec("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'trigram case_sensitive 0')");
afterAll(() => db.close());
const insert = db.query<unknown, [string]>("INSERT INTO t (rowid, body) VALUES (1, ?)");
const select = db.query<{ rowid: number }, [string]>("SELECT rowid FROM t WHERE t MATCH ?");
const clear = db.query("DELETE FROM t");

function indexSelects(query: string, text: string): boolean {
  clear.run();
  insert.run(text);
  return select.all(query).length > 0;
}

/** A pattern piece with a way to make texts it matches (when there is one). */
type Node =
  | { kind: "char"; char: string }
  | { kind: "set"; pattern: string; members: string[] }
  | { kind: "seq"; parts: Node[] }
  | { kind: "alt"; branches: Node[] }
  | { kind: "group"; open: string; body: Node }
  | { kind: "repeat"; body: Node; min: number; max: number; text: string }
  | { kind: "zero"; pattern: string };

// Letters whose case folds are not ASCII-only: K (Kelvin sign) and ſ (long s) fold to k and s in RE2.
const ALPHABET = ["a", "b", "c", "A", "B", "k", "s", "K", "ſ", "é", "É", "😀", " ", "-", "_", "1"];
const META = new Set([..."\\.+*?()|[]{}^$"]);
const escaped = (c: string) => (META.has(c) ? `\\${c}` : c);

const charNode = fc.oneof(fc.constantFrom(...ALPHABET), fc.constantFrom(".", "(", "*", "[", "{", "$", "\\", "|")).map((char): Node => ({ kind: "char", char }));
const setNode = fc.constantFrom<Node>(
  { kind: "set", pattern: "[ab]", members: ["a", "b"] },
  { kind: "set", pattern: "[a.-]", members: ["a", ".", "-"] },
  { kind: "set", pattern: "[_.-]", members: ["_", ".", "-"] },
  { kind: "set", pattern: "[o0]", members: ["o", "0"] },
  { kind: "set", pattern: "[a-c]", members: ["a", "b", "c"] },
  { kind: "set", pattern: "[^c]", members: ["a", "x", " ", "😀"] },
  { kind: "set", pattern: "[]a]", members: ["]", "a"] },
  { kind: "set", pattern: "[[:alpha:]]", members: ["q", "Z"] },
  { kind: "set", pattern: "\\d", members: ["0", "7"] },
  { kind: "set", pattern: "\\w", members: ["w", "_", "9"] },
  { kind: "set", pattern: "\\s", members: [" ", "\t"] },
  { kind: "set", pattern: ".", members: ["z", "😀", "."] },
  { kind: "set", pattern: "\\x61", members: ["a"] },
  { kind: "set", pattern: "\\x{1F600}", members: ["😀"] },
  { kind: "set", pattern: "\\141", members: ["a"] },
  { kind: "set", pattern: "\\pL", members: ["é", "q"] },
  { kind: "set", pattern: "\\p{Greek}", members: ["λ"] },
  { kind: "set", pattern: "\\Qa.b\\E", members: ["a.b"] },
  { kind: "set", pattern: "\\n", members: ["\n"] },
);
const zeroNode = fc.constantFrom<Node>({ kind: "zero", pattern: "^" }, { kind: "zero", pattern: "$" }, { kind: "zero", pattern: "\\b" }, { kind: "zero", pattern: "\\B" }, { kind: "zero", pattern: "(?i)" }, { kind: "zero", pattern: "(?s)" }, { kind: "zero", pattern: "(?-i)" }, { kind: "zero", pattern: "\\A" });
const quantifier = fc.constantFrom<[number, number, string]>([0, 1, "?"], [0, 3, "*"], [1, 3, "+"], [2, 2, "{2}"], [0, 0, "{0}"], [0, 1, "{0,1}"], [1, 3, "{1,}"], [2, 3, "{2,3}"], [0, 3, "*?"], [1, 1, "{1}"], [0, 1, "??"]);

const { node } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    charNode,
    charNode,
    setNode,
    zeroNode,
    fc.array(tie("node"), { minLength: 1, maxLength: 5 }).map((parts): Node => ({ kind: "seq", parts })),
    fc.array(tie("node"), { minLength: 2, maxLength: 3 }).map((branches): Node => ({ kind: "alt", branches })),
    fc.tuple(fc.constantFrom("(", "(?:", "(?i:", "(?P<n>", "(?<m>", "(?s:"), tie("node")).map(([open, body]): Node => ({ kind: "group", open, body })),
    fc.tuple(tie("node"), quantifier).map(([body, [min, max, text]]): Node => ({ kind: "repeat", body, min, max, text })),
  ),
}));

function patternOf(n: Node): string {
  switch (n.kind) {
    case "char":
      return escaped(n.char);
    case "set":
    case "zero":
      return n.pattern;
    case "seq":
      return n.parts.map(patternOf).join("");
    case "alt":
      return `(?:${n.branches.map(patternOf).join("|")})`;
    case "group":
      return `${n.open}${patternOf(n.body)})`;
    case "repeat": {
      // A quantifier applies to one atom: wrap anything longer.
      const body = patternOf(n.body);
      const atomic = n.body.kind === "char" || n.body.kind === "group" || (n.body.kind === "set" && !n.body.pattern.startsWith("\\Q")) ? body : `(?:${body})`;
      return `${atomic}${n.text}`;
    }
  }
}

/** Texts the node matches, picked at random; flags and anchors may still rule one out (re2js decides). */
function sampleOf(n: Node): fc.Arbitrary<string> {
  switch (n.kind) {
    case "char":
      return fc.constant(n.char);
    case "set":
      return fc.constantFrom(...n.members);
    case "zero":
      return fc.constant("");
    case "seq":
      return fc.tuple(...n.parts.map(sampleOf)).map((parts) => parts.join(""));
    case "alt":
      return fc.oneof(...n.branches.map(sampleOf));
    case "group":
      return sampleOf(n.body).chain((text) => (n.open.includes("i") ? fc.constantFrom(text, text.toUpperCase(), text.toLowerCase()) : fc.constant(text)));
    case "repeat":
      return fc.array(sampleOf(n.body), { minLength: n.min, maxLength: n.max }).map((parts) => parts.join(""));
  }
}

const context = fc.string({ unit: fc.constantFrom(...ALPHABET, "x", "."), maxLength: 6 });
const FLAGS: [string, number][] = [
  ["", 0],
  ["i", RE2JS.CASE_INSENSITIVE],
  ["s", RE2JS.DOTALL],
  ["m", RE2JS.MULTILINE],
];

function compiles(pattern: string, flags = 0): RE2JS | null {
  try {
    return RE2JS.compile(pattern, flags);
  } catch {
    return null;
  }
}

describe("fuzz: candidateQuery", () => {
  test(
    "every text the pattern matches is among the index's candidates",
    async () => {
      let checked = 0;
      await fuzz(
        "regex-literals/no-lost-match",
        fc.property(
          node.chain((n) => fc.tuple(fc.constant(patternOf(n)), sampleOf(n), context, context, fc.constantFrom(...FLAGS))),
          ([pattern, sample, before, after, [, flags]]) => {
            const regex = compiles(pattern, flags);
            if (regex === null) return;
            const query = candidateQuery(pattern);
            if (query === null) return;
            for (const text of [sample, before + sample + after, (before + sample + after).toUpperCase()]) {
              if (!regex.test(text)) continue;
              checked++;
              expect({ pattern, flags, text, query, selected: indexSelects(query, text) }).toEqual({ pattern, flags, text, query, selected: true });
            }
          },
        ),
        // About a fifth of the cases give a matching text; a loaded CI machine checked only 15 within the time limit.
        { minRuns: 500 },
      );
      // Not vacuous: matching texts were checked.
      expect(checked).toBeGreaterThan(20);
    },
    testTimeout(),
  );

  test(
    "any pattern RE2 compiles gives a query SQLite reads, quickly",
    async () => {
      const pieces = ["a", "b", "abc", "K", "(", ")", "(?:", "(?i)", "(?i:", "(?P<x>", "|", "*", "+", "?", "{2}", "{,2}", "{2,}", "{1,3}?", "[ab]", "[^a]", "[]a]", "[a-]", "[[:word:]]", "\\", "\\Q", "\\E", "\\x{41}", "\\pN", "\\b", "^", "$", ".", '"', "'", "😀", "\\.", "\\1", "\\07", "{", "}"];
      const pattern = fc.oneof(
        fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((parts) => parts.join("")),
        fc.string({ maxLength: 256 }),
        fc.string({ unit: fc.constantFrom(..."ab(|)*+?[]{}\\^$.:?<>P-0129xQE\""), maxLength: 256 }),
      );
      await fuzz(
        "regex-literals/any-pattern",
        fc.asyncProperty(pattern, async (p) => {
          if (compiles(p) === null) return;
          const query = await withinTime("candidateQuery", () => candidateQuery(p), 250);
          if (query !== null) indexSelects(query, "probe text");
        }),
      );
    },
    testTimeout(),
  );
});
