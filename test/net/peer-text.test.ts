// Text a remote peer wrote, as inboxd keeps and shows it (src/net/peer-text.ts).
import { expect, test } from "bun:test";
import { MAX_PEER_TEXT_CHARS, peerText } from "../../src/net/peer-text";

const holdsLoneSurrogate = (text: string) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

test("cut at 1,000 characters, never within a surrogate pair (an emoji), whichever side of it the cut falls", () => {
  for (const lead of ["", "a"]) {
    const kept = peerText(`${lead}${"😀".repeat(MAX_PEER_TEXT_CHARS)}`);
    expect(holdsLoneSurrogate(kept)).toBe(false);
    expect(kept).toMatch(/… \(\d+ more characters\)$/);
    expect(kept.indexOf("…")).toBeGreaterThanOrEqual(MAX_PEER_TEXT_CHARS - 1);
  }
});

test("on one line, its control characters replaced; a tab and non-ASCII text kept", () => {
  expect(peerText("250-first\r\n250 second\u0000\u001b[2J\u007f\u0085\tétape ✓\u2028end\r\u000b")).toBe("250-first 250 second\ufffd\ufffd[2J\ufffd\ufffd\tétape ✓ end");
});
