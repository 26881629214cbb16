/** FTS5 queries over the trigram index (migration 0040) for the search's literals. */
import type { LiteralRequirement } from "../store";

/** The trigram tokenizer indexes 3-character substrings; a shorter literal cannot use it. */
export const MINIMUM_LITERAL_LENGTH = 3;

/**
 * Longest phrase the index is asked for: FTS5 matches a phrase by reading every position of each
 * of its trigrams in each candidate row, so the cost follows the phrase's length (a 250-character
 * phrase over one 8 MB text took 8 s). A longer literal is looked up by its start and its end,
 * both of which a match holds, and the walk checks the whole (src/messages/search.ts).
 */
const LONGEST_INDEXED_LITERAL = 12;

/**
 * Longest word or phrase a plain search asks the index for whole (MessageSearchStore.longestPhrase):
 * one phrase of 30 trigrams costs a text at the index's cap (search-index.ts) a few milliseconds
 * at most; a regular expression's literals are shorter (LONGEST_INDEXED_LITERAL), since a pattern
 * may hold 16 alternatives of them. A longer phrase is a walk, as a pattern's literal is.
 */
export const LONGEST_PLAIN_PHRASE = 32;

/** A plain word or phrase as one FTS5 phrase: a substring match on the trigram index. */
export const ftsPhrase = (text: string) => `"${text.replaceAll('"', '""')}"`;

/** What the index is asked for a literal: the phrase itself, or its start and its end (LONGEST_INDEXED_LITERAL). */
function indexedLiteral(text: string): string {
  const characters = [...text];
  if (characters.length <= LONGEST_INDEXED_LITERAL) return ftsPhrase(text);
  return `(${ftsPhrase(characters.slice(0, LONGEST_INDEXED_LITERAL).join(""))} AND ${ftsPhrase(characters.slice(-LONGEST_INDEXED_LITERAL).join(""))})`;
}

/**
 * An FTS5 query every message meeting the requirement satisfies, or null when it cannot narrow
 * the search: literals below MINIMUM_LITERAL_LENGTH require nothing the index can check.
 */
export function ftsQuery(requirement: LiteralRequirement): string | null {
  switch (requirement.kind) {
    case "literal":
      return [...requirement.text].length >= MINIMUM_LITERAL_LENGTH ? indexedLiteral(requirement.text) : null;
    case "all": {
      const parts = requirement.parts.map(ftsQuery).filter((part): part is string => part !== null);
      return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : `(${parts.join(" AND ")})`;
    }
    case "oneOf": {
      const parts = requirement.parts.map(ftsQuery);
      return parts.some((part) => part === null) ? null : `(${parts.join(" OR ")})`;
    }
  }
}
