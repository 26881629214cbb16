/**
 * Whether the FTS5 trigram index finds a text in every case RE2's simple case folding matches.
 * The index folds case with SQLite's tables, older than RE2's: Georgian capitals (Mtavruli),
 * Cherokee's small letters, Adlam and some 900 pairs in all fold there to nothing. A word in them
 * found no other case of itself through the index, where a walk (RE2) finds it: such a search
 * walks. Each character is checked once, against an in-memory table of the same tokenizer.
 */
import { Database } from "bun:sqlite";

/** Characters whose check is kept; past it the memory starts again. */
const REMEMBERED = 10_000;

export function ftsFoldingCheck(): (text: string) => boolean {
  let probe: { fold(character: string): string | undefined } | undefined;
  const known = new Map<string, boolean>();

  const folds = (character: string): boolean => {
    probe ??= foldingProbe();
    const folded = probe.fold(character);
    // Its other cases of one character each must fold as it does. Unicode's case mapping has a
    // few pairs RE2's simple folding does not (ı and I): those walk too, with the same results.
    // Not checked with re2js itself, which the process loads only with the first walk.
    return [character.toLowerCase(), character.toUpperCase()].filter((other) => other !== character && [...other].length === 1).every((other) => probe!.fold(other) === folded);
  };

  return (text) => {
    for (const character of new Set(text)) {
      if (character < "\u0080") continue;
      let agrees = known.get(character);
      if (agrees === undefined) {
        if (known.size >= REMEMBERED) known.clear();
        agrees = folds(character);
        known.set(character, agrees);
      }
      if (!agrees) return false;
    }
    return true;
  };
}

/** A character as the index holds it: the last of the trigram `qq` + it makes. */
function foldingProbe() {
  const db = new Database(":memory:");
  db.run("CREATE VIRTUAL TABLE folding USING fts5(t, tokenize = 'trigram case_sensitive 0')");
  db.run("CREATE VIRTUAL TABLE folding_terms USING fts5vocab(folding, 'row')");
  const clear = db.query("DELETE FROM folding");
  const insert = db.query<never, [string]>("INSERT INTO folding (t) VALUES (?1)");
  const term = db.query<{ term: string }, []>("SELECT term FROM folding_terms");
  return {
    fold(character: string): string | undefined {
      clear.run();
      insert.run(`qq${character}`);
      return [...(term.get()?.term ?? "")].at(-1);
    },
  };
}
