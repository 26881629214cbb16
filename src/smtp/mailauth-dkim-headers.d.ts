// mailauth ships no types for its tag-list parser; this declares what inboxd reads of it.
declare module "mailauth/lib/parse-dkim-headers" {
  /** Parses a header field (`Name: value`) as mailauth's verifier does: a DKIM-Signature's tags, keyed by lower-case name, the last of a repeated one. */
  export default function parseDkimHeaders(field: string, options?: { strict?: boolean }): { parsed?: Record<string, { value?: unknown } | undefined> };
}
