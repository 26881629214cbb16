/**
 * Text a remote peer wrote (a mail server's reply, a DNS record), made fit to store and show: on
 * one line, its control characters each replaced by U+FFFD, cut at MAX_PEER_TEXT_CHARS. A NUL
 * failed every PostgreSQL transaction that recorded it (text and jsonb cannot hold one), and an
 * escape sequence reached whoever displays the text: a log, the console, a webhook's consumer.
 */

/**
 * Characters kept: a mail server's reply may run to nodemailer's 1 MiB (RFC 5321 §4.5.3.1.5 sets
 * 512 octets a line, and no bound on the lines), and one send to 50 recipients kept 50 such, 50 MB
 * in its message and its `message.bounced` event.
 */
export const MAX_PEER_TEXT_CHARS = 1_000;

export function peerText(text: string): string {
  const line = text
    .replace(/\r?\n|[\u2028\u2029]/g, " ")
    .trim()
    .replace(/[\0-\x08\x0a-\x1f\x7f-\x9f]/g, "\ufffd");
  if (line.length <= MAX_PEER_TEXT_CHARS) return line;
  // Never half a surrogate pair (an emoji): PostgreSQL's jsonb refused the lone one, and the check that held it.
  const end = isHighSurrogate(line.charCodeAt(MAX_PEER_TEXT_CHARS - 1)) ? MAX_PEER_TEXT_CHARS - 1 : MAX_PEER_TEXT_CHARS;
  return `${line.slice(0, end)}… (${line.length - end} more characters)`;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
