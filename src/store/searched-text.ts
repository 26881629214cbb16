/**
 * Characters (code points) of a message's text that search reads: the embedded engine's index
 * holds them (migration 0250, whose triggers name the same number), and a regular expression's
 * walk reads and tests them, on either engine (SQL's substr counts code points in both). FTS5
 * reads every position of a token in a candidate row, so an 8 MB text held a phrase search for
 * 8 s; and one test of a walk is one call that no slice interrupts, so a 20 MiB text held the
 * event loop for minutes.
 */
export const SEARCHED_TEXT_CHARS = 65_536;
