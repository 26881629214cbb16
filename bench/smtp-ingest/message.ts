// The message bench/smtp-ingest sends: about 4 kB of multipart/alternative, text and HTML in
// quoted-printable, DKIM-signed (RSA-2048) as most mail is today, composed the way inboxd composes
// its own mail. Written with LF line ends: smtp-source -F sends each line with CRLF. It has no
// Message-ID: inboxd keeps one copy of a message whose Message-ID the inbox already holds (a
// sender resending after a lost 250), and smtp-source sends this same file every time.
import { generateDkimKeys, dkimTxtValue } from "../../src/dkim/keys";
import { signMessage } from "../../src/dkim/sign";
import { composeMessage } from "../../src/mail/compose";
import { fieldName, filterHeaderFields } from "../../src/smtp/header-fields";

export const senderDomain = "sender.bench";

const paragraph =
  "Hello Bob, here is this week's update from the café: the new résumé workshop starts on Monday, " +
  "the reading group meets on Thursday evening — bring a friend — and the garden needs volunteers " +
  "for the weekend. Thank you for being part of the community.";

export async function benchMessage(recipient: string): Promise<{ file: string; dkimRecord: { name: string; value: string } }> {
  const [rsa] = await generateDkimKeys(new Date());
  const raw = await composeMessage({
    from: `news@${senderDomain}`,
    fromName: "Café Newsletter",
    to: [recipient],
    subject: "This week at the café: workshops, reading group, garden",
    text: Array.from({ length: 5 }, (_, i) => `${i + 1}. ${paragraph}`).join("\n\n"),
    html: `<html><body>${Array.from({ length: 5 }, (_, i) => `<p style="font-family:Arial,sans-serif;margin:0 0 12px">${i + 1}. ${paragraph}</p>`).join("")}</body></html>`,
    messageId: `<weekly-update@${senderDomain}>`,
    date: new Date(),
  });
  const withoutMessageId = filterHeaderFields(raw, (field) => fieldName(field) !== "message-id");
  const signed = await signMessage(withoutMessageId, { domain: senderDomain, keys: [rsa] });
  return {
    file: signed.toString("latin1").replaceAll("\r\n", "\n"),
    dkimRecord: { name: `${rsa.selector}._domainkey.${senderDomain}`, value: dkimTxtValue(rsa) },
  };
}
