// Line breaks an SMTP receiver must not accept, the root of SMTP smuggling (CVE-2023-51764 and
// kin): RFC 5321 §2.3.8 allows CR and LF only together, as CRLF, and §4.1.1.4 ends the data only
// at CRLF.CRLF. smtp-server already ends the data at CRLF.CRLF alone, but passes bare CR and LF
// into the message and ends command lines at a bare LF, so both are checked here.

const CR = 0x0d;
const LF = 0x0a;
const NUL = 0x00;

export type DataDefect = "bare LF" | "bare CR" | "NUL";

/** The bare line breaks of a chunk; `before` is the byte before it (undefined at the start), and a CR that ends it is left for the next chunk to judge. */
function bareLineBreaks(chunk: Buffer, before: number | undefined): { lf: boolean; cr: boolean } {
  let lf = false;
  for (let i = chunk.indexOf(LF); i !== -1 && !lf; i = chunk.indexOf(LF, i + 1)) lf = (i === 0 ? before : chunk[i - 1]) !== CR;
  let cr = before === CR && chunk[0] !== LF;
  for (let i = chunk.indexOf(CR); i !== -1 && i < chunk.length - 1 && !cr; i = chunk.indexOf(CR, i + 1)) cr = chunk[i + 1] !== LF;
  return { lf, cr };
}

/**
 * Why message data (as received after DATA, dot-unstuffed) must be refused, judged chunk by chunk
 * as it arrives: scanning a 20 MB message at its end held the event loop for 25-30 ms. Besides
 * bare CR and LF, NUL is refused: neither 7bit nor 8BITMIME data may hold it (RFC 6152 §3), and
 * BINARYMIME, which could, is not offered. A message with several defects is refused for the
 * first of bare LF, bare CR, NUL, wherever each is.
 */
export function dataDefects() {
  let before: number | undefined;
  const found = { lf: false, cr: false, nul: false };
  return {
    read(chunk: Buffer): void {
      // Bare LF decides the reply whatever else follows: the rest of the data need not be looked at.
      if (chunk.length === 0 || found.lf) return;
      const breaks = bareLineBreaks(chunk, before);
      found.lf ||= breaks.lf;
      found.cr ||= breaks.cr;
      found.nul ||= chunk.includes(NUL);
      before = chunk[chunk.length - 1];
    },
    /** Once the data is in: a CR that ended it had no LF after it. */
    end(): DataDefect | null {
      if (found.lf) return "bare LF";
      if (found.cr || before === CR) return "bare CR";
      return found.nul ? "NUL" : null;
    },
  };
}

/**
 * True when a chunk of command input holds a CR or LF that is not part of a CRLF. `before` is the
 * last byte of input still pending from earlier chunks (undefined when none): a CR that ends a
 * chunk is judged once the next chunk shows whether an LF follows.
 */
export function hasBareLineBreak(chunk: Buffer, before: number | undefined): boolean {
  const { lf, cr } = bareLineBreaks(chunk, before);
  return lf || cr;
}
