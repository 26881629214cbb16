/** A thread with every message, oldest first, and a reply to its latest message. */
import { v1 } from "../api/session";
import type { ThreadWithMessages } from "../api/types";
import { Back, Loaded, PageTitle } from "../components/common";
import { MessageView } from "../components/message-view";
import { ReplyForm } from "../components/reply-form";
import { plural } from "../lib/format";
import { useResource } from "../lib/resource";
import { href } from "../lib/router";

/** Full messages are heavier than list items: a thread refreshes less often than the lists. */
export const detailPollMs = 5000;

export function ThreadView({ inboxId, threadId }: { inboxId: string; threadId: string }) {
  const thread = useResource(() => v1.get<ThreadWithMessages>(`/inboxes/${encodeURIComponent(inboxId)}/threads/${encodeURIComponent(threadId)}`), [inboxId, threadId], {
    pollMs: detailPollMs,
  });
  return (
    <>
      <Back to={href("inboxes", inboxId)} label="Threads" />
      <Loaded resource={thread} what="thread">
        {(data) => (
          <>
            <PageTitle title={data.subject || "(no subject)"} />
            <p class="muted">{plural(data.messages.length, "message")}</p>
            <ol class="thread">
              {data.messages.map((message) => (
                <li key={message.id}>
                  <MessageView message={message} headingLevel={3} />
                </li>
              ))}
            </ol>
            {data.messages.length ? <ReplyForm message={data.messages[data.messages.length - 1]!} onSent={thread.reload} /> : null}
          </>
        )}
      </Loaded>
    </>
  );
}
