/**
 * The `page` and `per` query of every list (contract.md "Lists"): defaults 1 and 20, `per` at most
 * 100, out-of-range values 422. Checked as digit patterns rather than t.Integer: Elysia's integer
 * coercion reports a range error without the field's name, and the error must name it. The checked
 * text becomes a Page with pageOf (src/page.ts).
 */
import { t } from "elysia";

export const paginationQuery = t.Object({
  page: t.Optional(t.String({ pattern: "^[1-9][0-9]{0,8}$", error: "must be a whole number from 1 to 999999999", description: "default 1" })),
  per: t.Optional(t.String({ pattern: "^([1-9]|[1-9][0-9]|100)$", error: "must be a whole number from 1 to 100", description: "default 20" })),
});

