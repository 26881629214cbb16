// Line breaks an SMTP receiver must not accept, the root of SMTP smuggling (CVE-2023-51764 and
// kin): RFC 5321 §2.3.8 allows CR and LF only together, as CRLF, and §4.1.1.4 ends the data only
// at CRLF.CRLF. smtp-server already ends the data at CRLF.CRLF alone, but passes bare CR and LF
// into the message and ends command lines at a bare LF, so both are checked here.

const CR = 0x0d;
const LF = 0x0a;
const NUL = 0x00;

export type DataDefect = "bare LF" | "bare CR" | "NUL";

/**
 * Why message data (as received after DATA, dot-unstuffed) must be refused, or null. Besides
 * bare CR and LF, NUL is refused: neither 7bit nor 8BITMIME data may hold it (RFC 6152 §3), and
 * BINARYMIME, which could, is not offered.
 */
export function dataDefect(data: Buffer): DataDefect | null {
  for (let i = data.indexOf(LF); i !== -1; i = data.indexOf(LF, i + 1)) {
    if (i === 0 || data[i - 1] !== CR) return "bare LF";
  }
  for (let i = data.indexOf(CR); i !== -1; i = data.indexOf(CR, i + 1)) {
    if (data[i + 1] !== LF) return "bare CR";
  }
  return data.includes(NUL) ? "NUL" : null;
}

/**
 * True when a chunk of command input holds a CR or LF that is not part of a CRLF. `before` is the
 * last byte of input still pending from earlier chunks (undefined when none): a CR that ends a
 * chunk is judged once the next chunk shows whether an LF follows.
 */
export function hasBareLineBreak(chunk: Buffer, before: number | undefined): boolean {
  if (before === CR && chunk[0] !== LF) return true;
  for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
    if ((i === 0 ? before : chunk[i - 1]) !== CR) return true;
  }
  for (let i = chunk.indexOf(CR); i !== -1; i = chunk.indexOf(CR, i + 1)) {
    if (i < chunk.length - 1 && chunk[i + 1] !== LF) return true;
  }
  return false;
}
