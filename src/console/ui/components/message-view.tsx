/** One message in full: its header fields, authentication results, deliveries, attachments and body. */
import { useEffect, useMemo, useState } from "preact/hooks";
import { messageOf } from "../api/http";
import { v1 } from "../api/session";
import type { Attachment, Delivery, Message } from "../api/types";
import { dataUrl, downloadBlob, pdfBlob, previewableImages } from "../lib/files";
import { formatSize, nameAndAddress } from "../lib/format";
import { Badge, DataTable, Row, Time } from "./common";
import { MessageBody } from "./message-body";

function HeaderFields({ message }: { message: Message }) {
  const rows: [string, string | undefined][] = [
    ["From", nameAndAddress(message.from, message.fromName)],
    ["To", message.to.join(", ")],
    ["Cc", message.cc.join(", ")],
    ["Bcc", message.bcc.join(", ")],
    ["Labels", message.labels.join(", ")],
    ["Id", message.id],
    ["Provider id", message.externalMessageId],
  ];
  return (
    <dl class="fields">
      {rows
        .filter(([, value]) => value)
        .map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      <div>
        <dt>Date</dt>
        <dd>
          <Time iso={message.createdAt} />
        </dd>
      </div>
    </dl>
  );
}

/** SPF, DKIM and DMARC as the server found them on receipt (RFC 8601 result words). */
function AuthenticationBadges({ authentication }: { authentication: NonNullable<Message["authentication"]> }) {
  return (
    <p class="badges" aria-label="Authentication results">
      <Badge label="SPF" value={authentication.spf} />
      <Badge label="DKIM" value={authentication.dkim} />
      <Badge label="DMARC" value={authentication.dmarc} />
    </p>
  );
}

export function DeliveryTable({ deliveries }: { deliveries: Delivery[] }) {
  // The next try is shown where the API gives one (`nextAttemptAt`); the column is left out otherwise.
  const nextTry = deliveries.some((delivery) => delivery.nextAttemptAt);
  return (
    <DataTable columns={["Recipient", "Status", "Attempts", "Last response", nextTry && "Next try", "Updated"]} caption="Delivery to each recipient">
      {deliveries.map((delivery) => (
        <Row key={delivery.recipient}>
          <td>{delivery.recipient}</td>
          <td>
            <Badge value={delivery.status} />
          </td>
          <td>{delivery.attempts}</td>
          <td class="response">{delivery.lastResponse ?? "—"}</td>
          {nextTry ? (
            <td>
              <Time iso={delivery.nextAttemptAt} />
            </td>
          ) : null}
          <td>
            <Time iso={delivery.updatedAt} />
          </td>
        </Row>
      ))}
    </DataTable>
  );
}

/** A blob URL for as long as the component shows it. */
function useObjectUrl(make: () => Blob, content: string) {
  const url = useMemo(() => URL.createObjectURL(make()), [content]);
  useEffect(() => () => URL.revokeObjectURL(url), [url]);
  return url;
}

/** A PDF in the browser's viewer, in a frame sandboxed without scripts, same-origin access or forms. */
function PdfPreview({ attachment, name }: { attachment: Attachment; name: string }) {
  const url = useObjectUrl(() => pdfBlob(attachment.content), attachment.content);
  return <iframe class="pdf-preview" src={url} sandbox="" title={`Preview of ${name}`} />;
}

function AttachmentItem({ attachment }: { attachment: Attachment }) {
  const url = useObjectUrl(() => downloadBlob(attachment.content), attachment.content);
  const [previewing, setPreviewing] = useState(false);
  const name = attachment.name || "attachment";
  const type = attachment.contentType?.toLowerCase().split(";")[0]?.trim() ?? "";
  const image = previewableImages.has(type);
  return (
    <li>
      {image ? <img class="image-preview" src={dataUrl(attachment.content, type)} alt={`Preview of ${name}`} /> : null}
      <a href={url} download={name}>
        {name}
      </a>{" "}
      <span class="muted">
        {attachment.contentType ?? "file"}
        {attachment.size === undefined ? "" : `, ${formatSize(attachment.size)}`}
      </span>
      {type === "application/pdf" ? (
        <>
          {" "}
          <button type="button" class="small" aria-expanded={previewing} onClick={() => setPreviewing(!previewing)}>
            {previewing ? "Hide preview" : "Preview"}
          </button>
          {previewing ? <PdfPreview attachment={attachment} name={name} /> : null}
        </>
      ) : null}
    </li>
  );
}

/** The RFC 5322 source, fetched when opened: it can be large, and most readers never look. */
function RawSource({ message }: { message: Message }) {
  const [source, setSource] = useState<string>();
  const [error, setError] = useState<string>();
  const load = (event: Event) => {
    if (!(event.currentTarget as HTMLDetailsElement).open || source !== undefined) return;
    v1.get<string>(`/inboxes/${message.inboxId}/messages/${message.id}/raw`).then(setSource, (e) => setError(messageOf(e)));
  };
  return (
    <details class="raw-source" onToggle={load}>
      <summary>Raw source</summary>
      {error ? <p role="alert">{error}</p> : source === undefined ? <p class="muted">Loading…</p> : <pre tabIndex={0}>{source}</pre>}
    </details>
  );
}

export function MessageView({ message, headingLevel = 2 }: { message: Message; headingLevel?: 2 | 3 }) {
  const Heading = headingLevel === 2 ? "h2" : "h3";
  const files = message.attachments.filter((attachment) => !attachment.inline);
  return (
    <article class="message" aria-label={message.subject || "(no subject)"}>
      <header class="message-head">
        <Heading>{message.subject || "(no subject)"}</Heading>
        <Badge value={message.status} />
      </header>
      <HeaderFields message={message} />
      {message.authentication ? <AuthenticationBadges authentication={message.authentication} /> : null}
      {message.deliveries.length ? <DeliveryTable deliveries={message.deliveries} /> : null}
      {files.length ? (
        <section aria-label="Attachments">
          <h4>Attachments</h4>
          <ul class="attachments">
            {files.map((attachment, i) => (
              <AttachmentItem key={i} attachment={attachment} />
            ))}
          </ul>
        </section>
      ) : null}
      <MessageBody message={message} />
      <RawSource message={message} />
    </article>
  );
}
