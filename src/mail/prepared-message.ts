// The message compose.ts has checked and cleaned, which both writers take: compose-7bit.ts for the
// common 7bit message and compose.ts's MailComposer for any other. Apart from compose.ts so that
// the 7bit writer, which compose.ts calls, need not import it back.

export interface ComposeAttachment {
  filename?: string;
  /** Media type, e.g. `application/pdf`; derived from the filename when absent. */
  contentType?: string;
  content: Buffer;
  /** An inline part's Content-ID, without its brackets: the HTML shows it as `cid:...`. */
  cid?: string;
}

/** A message ready to write: addresses in wire form, header text cleaned, ids in brackets. */
export interface PreparedMessage {
  from: string;
  /** Empty when there is none. */
  fromName: string;
  to: string[];
  /** Display names of `to`, by position; "" where there is none. */
  toNames: string[];
  cc: string[];
  /** Display names of `cc`, by position; "" where there is none. */
  ccNames: string[];
  subject: string;
  messageId: string;
  date: Date;
  /** Empty when there is none. */
  inReplyTo: string;
  references: string[];
  text?: string;
  html?: string;
  attachments: ComposeAttachment[];
}
