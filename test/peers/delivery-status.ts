/**
 * RFC 3464 / RFC 6522: the report a remote MTA sends when mail it accepted cannot be delivered
 * after all, one status group per recipient, with the original's header fields when given.
 */
export interface ReportedRecipient {
  address: string;
  action: string;
  status: string;
}

export function deliveryStatusReport({ to, recipients, originalHeaders }: { to?: string; recipients: ReportedRecipient[]; originalHeaders?: string }): string {
  const groups = recipients.map((r) => `Final-Recipient: rfc822; ${r.address}\r\nAction: ${r.action}\r\nStatus: ${r.status}\r\nDiagnostic-Code: smtp; 550 ${r.status} mailbox unavailable\r\n`);
  return [
    "From: MAILER-DAEMON@mx.remote.test (Mail Delivery System)",
    ...(to ? [`To: ${to}`] : []),
    "Subject: Undelivered Mail Returned to Sender",
    "MIME-Version: 1.0",
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain",
    "",
    "Your message could not be delivered.",
    "--b1",
    "Content-Type: message/delivery-status",
    "",
    "Reporting-MTA: dns; mx.remote.test",
    "",
    groups.join("\r\n"),
    ...(originalHeaders === undefined ? [] : ["--b1", "Content-Type: text/rfc822-headers", "", originalHeaders, ""]),
    "--b1--",
    "",
  ].join("\r\n");
}
