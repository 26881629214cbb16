/** One message on its own page, with its thread a link away and a reply. */
import { useEffect } from "preact/hooks";
import { v1 } from "../api/session";
import type { Message } from "../api/types";
import { Back, Loaded } from "../components/common";
import { MessageView } from "../components/message-view";
import { ReplyForm } from "../components/reply-form";
import { useResource } from "../lib/resource";
import { href, navigate } from "../lib/router";
import { detailPollMs, setRead } from "./thread";

export function MessagePage({ inboxId, messageId }: { inboxId: string; messageId: string }) {
  const message = useResource(() => v1.get<Message>(`/inboxes/${encodeURIComponent(inboxId)}/messages/${encodeURIComponent(messageId)}`), [inboxId, messageId], {
    pollMs: detailPollMs,
    liveWhen: (event) => event.messageId === messageId,
  });
  // Opening an unread message reads it, as in the thread view.
  useEffect(() => void (message.data && !message.data.read && setRead(message.data, true).catch(() => undefined)), [message.data?.id]);
  return (
    <>
      <Back to={href("inboxes", inboxId, "messages")} label="Messages" />
      <Loaded resource={message} what="message">
        {(data) => (
          <>
            <p>
              <a href={href("inboxes", inboxId, "threads", data.threadId)}>Show the whole thread</a>
            </p>
            <MessageView message={data} />
            <ReplyForm message={data} onSent={(reply) => navigate("inboxes", inboxId, "threads", reply.threadId)} />
          </>
        )}
      </Loaded>
    </>
  );
}
