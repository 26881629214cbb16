/**
 * The literals a regular expression cannot match without (after Russ Cox, "Regular Expression
 * Matching with a Trigram Index"): `/inv.ice (\d+|#\w+) due/` needs "inv", "ice " and " due" in
 * the same text; `/colou?r (red|blue)/` needs one of "colour red", "color red", "colour blue",
 * "color blue" (small finite sets are kept exact and multiplied out). Looked up in the store's
 * trigram index, they select the candidates that the linear-time engine then checks, instead of
 * every message of the inbox.
 *
 * Conservative by construction: whatever is not understood counts as "no requirement", so the
 * candidates are always a superset of the matches. The pattern must already have compiled with
 * RE2 syntax (re2js), which this reader follows.
 */

import type { LiteralRequirement } from "../store/store";

/** A LiteralRequirement while it is read, where a part may still require nothing ("any"). */
type Requirement = { kind: "any" } | { kind: "literal"; text: string } | { kind: "all"; parts: Requirement[] } | { kind: "oneOf"; parts: Requirement[] };

const any: Requirement = { kind: "any" };

/**
 * What every match of the pattern contains, or null when nothing narrows the search. The store
 * turns it into its index's query (and ignores literals shorter than its index can look up).
 */
export function literalRequirement(pattern: string): LiteralRequirement | null {
  return withoutAny(new PatternReader(pattern).requirement());
}

/** "any" parts of an "all" drop out; a "oneOf" with an "any" part requires nothing. */
function withoutAny(requirement: Requirement): LiteralRequirement | null {
  switch (requirement.kind) {
    case "any":
      return null;
    case "literal":
      return requirement;
    case "all": {
      const parts = requirement.parts.map(withoutAny).filter((part): part is LiteralRequirement => part !== null);
      return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : { kind: "all", parts };
    }
    case "oneOf": {
      const parts = requirement.parts.map(withoutAny);
      return parts.some((part) => part === null) ? null : { kind: "oneOf", parts: parts as LiteralRequirement[] };
    }
  }
}

// RE2 syntax (github.com/google/re2/wiki/Syntax): x{n}, x{n,}, x{n,m}; any other `{` is a literal.
const REPEAT = /^\{(\d+)(?:(,)(\d*))?\}/;
// Inline flags, alone `(?i)` or opening a group `(?i:`, `(?:`.
const FLAGS = /^\(\?[imsU-]*(\)|:)/;
const NAMED_GROUP = /^\(\?P?<[A-Za-z0-9_]+>/;
const LOOKAROUND = /^\(\?(=|!|<=|<!)/;
// A class like `[o0]` or `[_.-]` is kept as its members; ranges, negation, escapes and larger sets are not.
const SMALL_CLASS = /^\[([^\]\\^[-][^\]\\[-]{0,7}-?)\]/u;

/** Exact sets larger than this are not multiplied out further. */
const maxExactStrings = 16;

/** What one part of a pattern matches: exactly one of `exact` (when small and known), and at least `requirement`. */
interface Info {
  exact: string[] | null;
  requirement: Requirement;
}

const literal = (text: string): Requirement => ({ kind: "literal", text });
const oneOfStrings = (strings: string[]): Requirement => (strings.length === 1 ? literal(strings[0]!) : { kind: "oneOf", parts: strings.map(literal) });
const exactly = (strings: string[]): Info => ({ exact: strings, requirement: oneOfStrings(strings) });
const unknown: Info = { exact: null, requirement: any };
/** A zero-width assertion (`^`, `\b`, `(?i)`): matches the empty string wherever it matches. */
const empty = (): Info => exactly([""]);

/** Every concatenation of one of `a` with one of `b`, or null when there would be too many. */
function cross(a: string[], b: string[]): string[] | null {
  if (a.length * b.length > maxExactStrings) return null;
  return [...new Set(a.flatMap((x) => b.map((y) => x + y)))];
}

interface Quantifier {
  min: number;
  max: number;
}

class PatternReader {
  private readonly chars: string[];
  private at = 0;

  constructor(pattern: string) {
    // Code points: a quantifier after an astral character repeats the whole character.
    this.chars = [...pattern];
  }

  requirement(): Requirement {
    const { requirement } = this.alternation();
    // Anything left over (an unmatched `)`) is beyond this reader: claim nothing.
    return this.at < this.chars.length ? any : requirement;
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.at + offset];
  }

  private rest(): string {
    return this.chars.slice(this.at).join("");
  }

  private alternation(): Info {
    const branches = [this.sequence()];
    while (this.peek() === "|") {
      this.at++;
      branches.push(this.sequence());
    }
    if (branches.length === 1) return branches[0]!;
    const requirement: Requirement = { kind: "oneOf", parts: branches.map((branch) => branch.requirement) };
    const union = branches.every((branch) => branch.exact) ? [...new Set(branches.flatMap((branch) => branch.exact!))] : null;
    return union && union.length <= maxExactStrings ? { exact: union, requirement } : { exact: null, requirement };
  }

  /**
   * A concatenation. `current` holds the exact strings since the last break; when a part cannot
   * be multiplied in, they are kept as "one of these" and a new run starts.
   */
  private sequence(): Info {
    const parts: Requirement[] = [];
    let current = [""];
    let whole = true;
    const flush = () => {
      parts.push(oneOfStrings(current));
      current = [""];
      whole = false;
    };
    const append = (strings: string[]) => {
      const product = cross(current, strings);
      if (product) current = product;
      else {
        flush();
        current = strings;
      }
    };
    for (let c = this.peek(); c !== undefined && c !== "|" && c !== ")"; c = this.peek()) {
      const atom = this.atom();
      const quantifier = this.quantifiers();
      if (quantifier === undefined || (quantifier.min === 1 && quantifier.max === 1)) {
        if (atom.exact) append(atom.exact);
        else {
          flush();
          parts.push(atom.requirement);
        }
      } else if (quantifier.min === 0) {
        // `x?` adds "" to x's strings; `x*` may match any number of x: nothing is adjacent across it.
        if (quantifier.max === 1 && atom.exact) append([...new Set([...atom.exact, ""])]);
        else flush();
      } else if (atom.exact) {
        // `x+`: one of x ends what came before, one of x starts what follows (`abc+d`: "abc", "cd").
        append(atom.exact);
        flush();
        current = atom.exact;
      } else {
        flush();
        parts.push(atom.requirement);
      }
    }
    if (whole) return exactly(current);
    flush();
    return { exact: null, requirement: { kind: "all", parts } };
  }

  private atom(): Info {
    const c = this.chars[this.at++]!;
    switch (c) {
      case "(":
        return this.group();
      case "[":
        return this.characterClass();
      case "\\":
        return this.escape();
      case "^":
      case "$":
        return empty();
      case ".":
        return unknown;
      default:
        return exactly([c]);
    }
  }

  private group(): Info {
    this.at--;
    const rest = this.rest();
    const flags = FLAGS.exec(rest);
    if (flags?.[1] === ")") {
      this.at += [...flags[0]].length;
      return empty();
    }
    const opening = flags?.[0] ?? NAMED_GROUP.exec(rest)?.[0] ?? LOOKAROUND.exec(rest)?.[0] ?? "(";
    this.at += [...opening].length;
    const body = this.alternation();
    if (this.peek() === ")") this.at++;
    // A lookaround matches no text of its own.
    return LOOKAROUND.test(opening) ? unknown : body;
  }

  /** `[...]`: a `]` first (after an optional `^`) is literal; `[:alpha:]` and escapes nest. */
  private characterClass(): Info {
    this.at--;
    const small = SMALL_CLASS.exec(this.rest());
    if (small) {
      this.at += [...small[0]].length;
      return exactly([...new Set(small[1]!)]);
    }
    this.at++;
    if (this.peek() === "^") this.at++;
    if (this.peek() === "]") this.at++;
    while (this.at < this.chars.length && this.peek() !== "]") {
      if (this.peek() === "\\") this.at += 2;
      else if (this.peek() === "[" && this.peek(1) === ":") {
        const close = this.chars.indexOf("]", this.at + 2);
        this.at = close < 0 ? this.chars.length : close + 1;
      } else this.at++;
    }
    this.at++;
    return unknown;
  }

  private escape(): Info {
    const c = this.chars[this.at++];
    if (c === undefined) return unknown;
    if (/[0-7]/.test(c)) {
      // Octal \123: up to three digits in all.
      for (let i = 0; i < 2 && /[0-7]/.test(this.peek() ?? ""); i++) this.at++;
      return unknown;
    }
    if (c === "x" || c === "p" || c === "P") {
      if (this.peek() === "{") this.skipPast("}");
      else this.at += c === "x" ? 2 : 1;
      return unknown;
    }
    if (c === "Q") {
      // \Q...\E quotes its text; treated as unknown rather than unpicked.
      while (this.at < this.chars.length && !(this.peek() === "\\" && this.peek(1) === "E")) this.at++;
      this.at += 2;
      return unknown;
    }
    // Zero-width: word boundaries, start and end of text.
    if ("bBAz".includes(c)) return empty();
    // \d, \w, \s, \n ... are classes or control characters: not indexed literals.
    if (/[A-Za-z0-9]/.test(c)) return unknown;
    return exactly([c]);
  }

  private skipPast(close: string) {
    const end = this.chars.indexOf(close, this.at);
    this.at = end < 0 ? this.chars.length : end + 1;
  }

  /**
   * What repeats the atom just read. A flags group `(?i)` is no atom in RE2: a quantifier after it
   * still applies to the atom before it, and so may a second one (`c{2}(?i)?`), whose bounds multiply.
   */
  private quantifiers(): Quantifier | undefined {
    let combined: Quantifier | undefined;
    for (;;) {
      this.skipFlagGroups();
      const next = this.quantifier();
      if (!next) return combined;
      combined = combined ? { min: combined.min * next.min, max: combined.max * next.max } : next;
    }
  }

  private skipFlagGroups() {
    for (let flags = FLAGS.exec(this.rest()); flags?.[1] === ")"; flags = FLAGS.exec(this.rest())) this.at += [...flags[0]].length;
  }

  private quantifier(): Quantifier | undefined {
    const c = this.peek();
    let quantifier: Quantifier;
    if (c === "*" || c === "?" || c === "+") {
      this.at++;
      quantifier = { min: c === "+" ? 1 : 0, max: c === "?" ? 1 : Infinity };
    } else if (c === "{") {
      const repeat = REPEAT.exec(this.rest());
      if (!repeat) return undefined;
      this.at += repeat[0].length;
      const min = Number(repeat[1]);
      quantifier = { min, max: repeat[2] === undefined ? min : repeat[3] ? Number(repeat[3]) : Infinity };
    } else {
      return undefined;
    }
    // Non-greedy `*?`, `+?`, `{n,m}?`: the same set of matches.
    if (this.peek() === "?") this.at++;
    return quantifier;
  }
}
