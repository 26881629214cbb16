/**
 * The literals a regular expression cannot match without (after Russ Cox, "Regular Expression
 * Matching with a Trigram Index"): `/inv.ice (\d+|#\w+) due/` needs "inv", "ice " and " due" in
 * the same text. Written as an FTS5 query over the trigram index, they select the candidates that
 * the linear-time engine then checks, instead of every message of the inbox.
 *
 * Conservative by construction: whatever is not understood counts as "no requirement", so the
 * candidates are always a superset of the matches. The pattern must already have compiled with
 * RE2 syntax (re2js), which this reader follows.
 */

type Requirement =
  | { kind: "any" }
  | { kind: "literal"; text: string }
  | { kind: "all"; parts: Requirement[] }
  | { kind: "oneOf"; parts: Requirement[] };

const any: Requirement = { kind: "any" };

/** The trigram tokenizer indexes 3-character substrings; a shorter literal cannot use it. */
export const minimumLiteralLength = 3;

/** An FTS5 query every match of the pattern satisfies, or null when none can narrow the search. */
export function candidateQuery(pattern: string): string | null {
  return toFtsQuery(new PatternReader(pattern).requirement());
}

/** A plain word or phrase as one FTS5 phrase: a substring match on the trigram index. */
export const ftsPhrase = (text: string) => `"${text.replaceAll('"', '""')}"`;

function toFtsQuery(requirement: Requirement): string | null {
  switch (requirement.kind) {
    case "any":
      return null;
    case "literal":
      return [...requirement.text].length >= minimumLiteralLength ? ftsPhrase(requirement.text) : null;
    case "all": {
      const parts = requirement.parts.map(toFtsQuery).filter((part): part is string => part !== null);
      return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : `(${parts.join(" AND ")})`;
    }
    case "oneOf": {
      const parts = requirement.parts.map(toFtsQuery);
      return parts.some((part) => part === null) ? null : `(${parts.join(" OR ")})`;
    }
  }
}

// RE2 syntax (github.com/google/re2/wiki/Syntax): x{n}, x{n,}, x{n,m}; any other `{` is a literal.
const REPEAT = /^\{(\d+)(?:,\d*)?\}/;
// Inline flags, alone `(?i)` or opening a group `(?i:`, `(?:`.
const FLAGS = /^\(\?[imsU-]*(\)|:)/;
const NAMED_GROUP = /^\(\?P?<[A-Za-z0-9_]+>/;
const LOOKAROUND = /^\(\?(=|!|<=|<!)/;

class PatternReader {
  private readonly chars: string[];
  private at = 0;

  constructor(pattern: string) {
    // Code points: a quantifier after an astral character repeats the whole character.
    this.chars = [...pattern];
  }

  requirement(): Requirement {
    const requirement = this.alternation();
    // Anything left over (an unmatched `)`) is beyond this reader: claim nothing.
    return this.at < this.chars.length ? any : requirement;
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.at + offset];
  }

  private rest(): string {
    return this.chars.slice(this.at).join("");
  }

  private alternation(): Requirement {
    const branches = [this.sequence()];
    while (this.peek() === "|") {
      this.at++;
      branches.push(this.sequence());
    }
    return branches.length === 1 ? branches[0]! : { kind: "oneOf", parts: branches };
  }

  private sequence(): Requirement {
    const parts: Requirement[] = [];
    let run: string[] = [];
    const endRun = () => {
      if (run.length > 0) parts.push({ kind: "literal", text: run.join("") });
      run = [];
    };
    for (let c = this.peek(); c !== undefined && c !== "|" && c !== ")"; c = this.peek()) {
      const atom = this.atom();
      const min = this.quantifierMin();
      if (typeof atom === "string") {
        if (min === 0) {
          endRun();
        } else if (min === undefined) {
          run.push(atom);
        } else {
          // `abc+d`: every match holds "abc", then more c's, then "cd".
          run.push(atom);
          endRun();
          run = [atom];
        }
      } else {
        endRun();
        if (min !== 0) parts.push(atom);
      }
    }
    endRun();
    return { kind: "all", parts };
  }

  /** One atom: a literal character (string), or what a non-literal atom requires. */
  private atom(): string | Requirement {
    const c = this.chars[this.at++]!;
    switch (c) {
      case "(":
        return this.group();
      case "[":
        this.skipClass();
        return any;
      case "\\":
        return this.escape();
      case ".":
      case "^":
      case "$":
        return any;
      default:
        return c;
    }
  }

  private group(): Requirement {
    this.at--;
    const rest = this.rest();
    const flags = FLAGS.exec(rest);
    if (flags?.[1] === ")") {
      this.at += [...flags[0]].length;
      return any;
    }
    const opening = flags?.[0] ?? NAMED_GROUP.exec(rest)?.[0] ?? LOOKAROUND.exec(rest)?.[0] ?? "(";
    this.at += [...opening].length;
    const body = this.alternation();
    if (this.peek() === ")") this.at++;
    // A lookaround matches no text of its own.
    return LOOKAROUND.test(opening) ? any : body;
  }

  /** `[...]`: a `]` first (after an optional `^`) is literal; `[:alpha:]` and escapes nest. */
  private skipClass() {
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
  }

  private escape(): string | Requirement {
    const c = this.chars[this.at++];
    if (c === undefined) return any;
    if (/[0-7]/.test(c)) {
      // Octal \123: up to three digits in all.
      for (let i = 0; i < 2 && /[0-7]/.test(this.peek() ?? ""); i++) this.at++;
      return any;
    }
    if (c === "x" || c === "p" || c === "P") {
      if (this.peek() === "{") this.skipPast("}");
      else this.at += c === "x" ? 2 : 1;
      return any;
    }
    if (c === "Q") {
      // \Q...\E quotes its text; treated as unknown rather than unpicked.
      while (this.at < this.chars.length && !(this.peek() === "\\" && this.peek(1) === "E")) this.at++;
      this.at += 2;
      return any;
    }
    // \d, \w, \b, \n ... are classes, assertions or control characters: not indexed literals.
    if (/[A-Za-z0-9]/.test(c)) return any;
    return c;
  }

  private skipPast(close: string) {
    const end = this.chars.indexOf(close, this.at);
    this.at = end < 0 ? this.chars.length : end + 1;
  }

  /** The minimum count of a quantifier after an atom, or undefined when there is none. */
  private quantifierMin(): number | undefined {
    const c = this.peek();
    let min: number | undefined;
    if (c === "*" || c === "?") {
      this.at++;
      min = 0;
    } else if (c === "+") {
      this.at++;
      min = 1;
    } else if (c === "{") {
      const repeat = REPEAT.exec(this.rest());
      if (!repeat) return undefined;
      this.at += repeat[0].length;
      min = Number(repeat[1]);
    } else {
      return undefined;
    }
    // Non-greedy `*?`, `+?`, `{n,m}?`: the same set of matches.
    if (this.peek() === "?") this.at++;
    return min;
  }
}
