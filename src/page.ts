/**
 * One page of a list (docs/api.md "Lists"): `page` counts from 1, `per` items on each. A leaf
 * module, so that services and stores take pages without importing the HTTP layer, which checks
 * the query text (src/http/pagination.ts).
 */
export interface Page {
  page: number;
  per: number;
}

const FIRST_PAGE = 1;
const DEFAULT_PER_PAGE = 20;

/** The page a `page` and `per` query asks for, its text already checked; absent values take the defaults. */
export const pageOf = (query: { page?: string; per?: string }): Page => ({ page: Number(query.page ?? FIRST_PAGE), per: Number(query.per ?? DEFAULT_PER_PAGE) });

/**
 * A page of a list with what its `Link` and `X-Total-Count` headers need (src/http/pagination.ts):
 * the items, the list's total when it was counted, and whether another page follows.
 */
export interface Listing<T> {
  page: Page;
  items: T[];
  /** Items in the whole list; undefined when not counted (the message list and its searches: see messages/service.ts). */
  total?: number;
  /** Whether the page after this one holds items. */
  hasNext: boolean;
}

/**
 * The page with the list's total, counted only when the page cannot tell it: a page short of `per`
 * is the last one, so its own length gives the total, unless it is empty past the first page (the
 * list may end anywhere before it). The count is read apart from the page, so a write in between
 * may make them differ by a little; the total never says less than the page shows.
 */
export async function withTotal<T>(page: Page, items: T[], count: () => Promise<number>): Promise<Listing<T>> {
  const before = (page.page - 1) * page.per;
  const endsHere = items.length < page.per && (items.length > 0 || page.page === FIRST_PAGE);
  const shown = items.length > 0 ? before + items.length : 0;
  const total = endsHere ? shown : Math.max(await count(), shown);
  return { page, items, total, hasNext: before + page.per < total };
}

/** The page from rows read with one more than `per`: that extra row is not shown, it only says another page follows. */
export const lookedAhead = <T>(page: Page, rows: T[]): Listing<T> => ({ page, items: rows.length > page.per ? rows.slice(0, page.per) : rows, hasNext: rows.length > page.per });

/** The items of a listing presented, its total and next page unchanged. */
export const mapListing = <T, U>(listing: Listing<T>, present: (item: T) => U): Listing<U> => ({ ...listing, items: listing.items.map(present) });

/** The page of a list held whole in memory (a domain's DNS records), with its total. */
export function pageOfAll<T>(page: Page, all: T[]): Listing<T> {
  const from = (page.page - 1) * page.per;
  return { page, items: all.slice(from, from + page.per), total: all.length, hasNext: from + page.per < all.length };
}
