/** FTS5 queries over the trigram index (migration 0040) for the search's literals. */
import type { LiteralRequirement } from "../store";

/** The trigram tokenizer indexes 3-character substrings; a shorter literal cannot use it. */
export const MINIMUM_LITERAL_LENGTH = 3;

/** A plain word or phrase as one FTS5 phrase: a substring match on the trigram index. */
export const ftsPhrase = (text: string) => `"${text.replaceAll('"', '""')}"`;

/**
 * An FTS5 query every message meeting the requirement satisfies, or null when it cannot narrow
 * the search: literals below MINIMUM_LITERAL_LENGTH require nothing the index can check.
 */
export function ftsQuery(requirement: LiteralRequirement): string | null {
  switch (requirement.kind) {
    case "literal":
      return [...requirement.text].length >= MINIMUM_LITERAL_LENGTH ? ftsPhrase(requirement.text) : null;
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
