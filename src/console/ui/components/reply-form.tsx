/** Replying to a message: the server addresses it (the original sender) and threads it. */
import type { Message } from "../api/types";
import { v1 } from "../api/session";
import { nameAndAddress } from "../lib/format";
import { submittedValues } from "../lib/forms";
import { useAction } from "../lib/resource";
import { textToHtml } from "../lib/text-html";
import { ErrorNote } from "./common";

export function ReplyForm({ message, onSent }: { message: Message; onSent(reply: Message): void }) {
  const action = useAction();
  const send = (event: SubmitEvent) => {
    const form = event.currentTarget as HTMLFormElement;
    const { text } = submittedValues(event);
    void action
      .run(() => v1.post<Message>(`/inboxes/${encodeURIComponent(message.inboxId)}/messages/${encodeURIComponent(message.id)}/reply`, { text, html: textToHtml(text) }))
      .then((reply) => {
        if (!reply) return;
        form.reset();
        onSent(reply);
      });
  };
  return (
    <form class="reply card" onSubmit={send}>
      <label for={`reply-${message.id}`}>Reply to {message.status === "received" ? nameAndAddress(message.from, message.fromName) : message.to.join(", ")}</label>
      <textarea id={`reply-${message.id}`} name="text" rows={5} required />
      <ErrorNote message={action.error} />
      <button type="submit" class="primary" disabled={action.busy}>
        {action.busy ? "Sending…" : "Send reply"}
      </button>
    </form>
  );
}
