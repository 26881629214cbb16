/**
 * An SMTP rejection for smtp-server's hooks: the library sends `responseCode` and the message,
 * which starts with the RFC 3463 enhanced status code (see InboxdSmtpServer's send).
 */
export class SmtpReply extends Error {
  constructor(
    readonly responseCode: number,
    readonly enhancedStatus: string,
    text: string,
  ) {
    super(`${enhancedStatus} ${text}`);
  }
}
