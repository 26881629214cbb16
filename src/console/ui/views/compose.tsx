/** A new message from an inbox, in a new thread. */
import { v1 } from "../api/session";
import type { Message } from "../api/types";
import { Back, ErrorNote, PageTitle } from "../components/common";
import { fileToBase64 } from "../lib/files";
import { addressList, nameAndAddress } from "../lib/format";
import { submittedValues } from "../lib/forms";
import { useAction } from "../lib/resource";
import { href, navigate } from "../lib/router";
import { textToHtml } from "../lib/text-html";
import { useInbox } from "./mailbox";

const attachmentsOf = (input: HTMLInputElement) =>
  Promise.all([...(input.files ?? [])].map(async (file) => ({ name: file.name, contentType: file.type || undefined, content: await fileToBase64(file) })));

export function Compose({ inboxId }: { inboxId: string }) {
  const inbox = useInbox(inboxId);
  const action = useAction();
  const send = (event: SubmitEvent) => {
    const form = event.currentTarget as HTMLFormElement;
    const values = submittedValues(event);
    void action
      .run(async () =>
        v1.post<Message>(`/inboxes/${encodeURIComponent(inboxId)}/messages/send`, {
          to: addressList(values.to ?? ""),
          cc: addressList(values.cc ?? ""),
          bcc: addressList(values.bcc ?? ""),
          subject: values.subject ?? "",
          text: values.text ?? "",
          html: textToHtml(values.text ?? ""),
          attachments: await attachmentsOf(form.elements.namedItem("attachments") as HTMLInputElement),
        }),
      )
      .then((sent) => sent && navigate("inboxes", inboxId, "threads", sent.threadId));
  };
  return (
    <>
      <Back to={href("inboxes", inboxId)} label="Threads" />
      <PageTitle title="New message" />
      <form class="card compose" onSubmit={send}>
        <p class="muted">From {inbox.data ? nameAndAddress(inbox.data.email, inbox.data.name) : "…"}</p>
        <label>
          To
          <input name="to" required autocomplete="off" placeholder="someone@example.com, another@example.com" />
        </label>
        <div class="row">
          <label>
            Cc
            <input name="cc" autocomplete="off" />
          </label>
          <label>
            Bcc
            <input name="bcc" autocomplete="off" />
          </label>
        </div>
        <label>
          Subject
          <input name="subject" required />
        </label>
        <label>
          Message
          <textarea name="text" rows={10} required />
        </label>
        <label>
          Attachments
          <input name="attachments" type="file" multiple />
        </label>
        <ErrorNote message={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? "Sending…" : "Send"}
        </button>
      </form>
    </>
  );
}
