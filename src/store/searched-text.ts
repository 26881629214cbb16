/**
 * Characters (code points) of a message's text that search reads: the embedded engine's index
 * holds them (migration 0250, whose triggers name the same number), and a regular expression's
 * walk tests them, on either engine. FTS5 reads every position of a token in a candidate row, so
 * an 8 MB text held a phrase search for 8 s; and one test of a walk is one call that no slice
 * interrupts, so a 20 MiB text held the event loop for minutes.
 */
export const SEARCHED_TEXT_CHARS = 65_536;

/** The first SEARCHED_TEXT_CHARS code points of `text`, as SQL's substr counts them. */
export function searchedText(text: string): string {
  // Fewer UTF-16 units than the count: fewer code points too.
  if (text.length <= SEARCHED_TEXT_CHARS) return text;
  let units = 0;
  for (let points = 0; points < SEARCHED_TEXT_CHARS && units < text.length; points++) units += text.codePointAt(units)! > 0xffff ? 2 : 1;
  return text.slice(0, units);
}
