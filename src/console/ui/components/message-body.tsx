/** A message's body: its HTML only inside a sandboxed iframe, its plain text as escaped text. */
import { useMemo, useState } from "preact/hooks";
import type { Message } from "../api/types";
import { plural } from "../lib/format";
import { framePolicy, prepareMailHtml, srcdoc } from "../lib/mail-html";

/** Popups (links open in new tabs) may leave the sandbox; scripts, forms and same-origin access never. */
const sandbox = "allow-popups allow-popups-to-escape-sandbox";

function HtmlBody({ message }: { message: Message & { html: string } }) {
  const [remoteImages, setRemoteImages] = useState(false);
  const prepared = useMemo(() => prepareMailHtml(message.html, message.attachments, remoteImages), [message.id, message.html, remoteImages]);
  return (
    <div class="html-body">
      {prepared.remoteImages > 0 && !remoteImages ? (
        <p class="blocked-images">
          {plural(prepared.remoteImages, "remote image")} blocked: loading them tells the sender you read this.{" "}
          <button type="button" class="small" onClick={() => setRemoteImages(true)}>
            Show images
          </button>
        </p>
      ) : null}
      {/* `csp` (CSP Embedded Enforcement, Chromium) holds the frame to the policy from its first byte, before its own <meta> is read. */}
      <iframe
        title={`Message: ${message.subject || "(no subject)"}`}
        sandbox={sandbox}
        referrerpolicy="no-referrer"
        {...{ csp: framePolicy(prepared.remoteImagesShown) }}
        srcdoc={srcdoc(prepared)}
      />
    </div>
  );
}

export function MessageBody({ message }: { message: Message }) {
  const hasHtml = Boolean(message.html?.trim());
  const [view, setView] = useState<"html" | "text">(hasHtml ? "html" : "text");
  return (
    <section class="message-body" aria-label="Message body">
      {hasHtml && message.text ? (
        <div class="tabs small" role="group" aria-label="Body format">
          <button type="button" aria-pressed={view === "html"} onClick={() => setView("html")}>
            HTML
          </button>
          <button type="button" aria-pressed={view === "text"} onClick={() => setView("text")}>
            Plain text
          </button>
        </div>
      ) : null}
      {view === "html" && hasHtml ? <HtmlBody message={message as Message & { html: string }} /> : <pre class="text-body">{message.text || "(no text)"}</pre>}
    </section>
  );
}
