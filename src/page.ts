/**
 * One page of a list (contract.md "Lists"): `page` counts from 1, `per` items on each. A leaf
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
