/**
 * Text that goes into a header field, such as a subject or a display name. A CR or LF would end the
 * field and start one the writer chose (header injection); other C0 controls and DEL are not
 * allowed in header text either (RFC 5322 §2.2), nor C1 controls (NEL, U+0085, among them) and the
 * Unicode line and paragraph separators, which readers show as line breaks. A tab is: it is
 * folding white space.
 */
const HEADER_UNSAFE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/;

export const isHeaderSafe = (value: string) => !HEADER_UNSAFE.test(value);

/** Header text made safe: each run of what isHeaderSafe refuses becomes one space. */
export const headerSafe = (value: string) => value.replace(new RegExp(`${HEADER_UNSAFE.source}+`, "g"), " ");
