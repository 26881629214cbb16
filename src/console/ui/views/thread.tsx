/**
 * A thread beside the inbox's list (or instead of it on a narrow screen): its messages oldest
 * first, the older read ones collapsed to a line each, and a reply to its latest message. Opening
 * it marks its unread messages read; "Mark unread" undoes that for the newest.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Message, ThreadWithMessages } from "../api/types";
import { Back, ErrorNote, Loaded, Time } from "../components/common";
import { MessageView } from "../components/message-view";
import { ReplyForm } from "../components/reply-form";
import { nameAndAddress, plural } from "../lib/format";
import { useAction, useResource } from "../lib/resource";
import { href, navigate } from "../lib/router";

/** Full messages are heavier than list items: while the event stream is down, a thread refreshes less often than the lists. */
export const detailPollMs = 5000;

const messagePath = (message: Message) => `/inboxes/${encodeURIComponent(message.inboxId)}/messages/${encodeURIComponent(message.id)}`;

export const setRead = (message: Message, read: boolean) => v1.patch<Message>(messagePath(message), { read });

/** A message in full, or collapsed to one line (sender, start of its text, date) that opens it. */
function ThreadMessage({ message, startsOpen }: { message: Message; startsOpen: boolean }) {
  const [open, setOpen] = useState(startsOpen);
  if (open) return <MessageView message={message} headingLevel={3} />;
  return (
    <button type="button" class="collapsed-message" aria-expanded="false" onClick={() => setOpen(true)}>
      <span class="sender">{message.fromName || message.from}</span>
      <span class="snippet">{message.text?.replace(/\s+/g, " ").slice(0, 160)}</span>
      <Time iso={message.createdAt} />
    </button>
  );
}

/** Marks the thread's unread messages read once per message, then says so (the list shows unread counts). */
function useMarkRead(messages: Message[] | undefined, onChanged: () => void) {
  const marked = useRef(new Set<string>());
  useEffect(() => {
    const unread = (messages ?? []).filter((message) => !message.read && !marked.current.has(message.id));
    if (!unread.length) return;
    for (const message of unread) marked.current.add(message.id);
    void Promise.all(unread.map((message) => setRead(message, true))).then(onChanged, () => undefined);
  }, [messages]);
  return marked.current;
}

export function ThreadView({ inboxId, threadId, onChanged }: { inboxId: string; threadId: string; onChanged(): void }) {
  const thread = useResource(() => v1.get<ThreadWithMessages>(`/inboxes/${encodeURIComponent(inboxId)}/threads/${encodeURIComponent(threadId)}`), [inboxId, threadId], {
    pollMs: detailPollMs,
    liveWhen: (event) => event.threadId === threadId,
  });
  const marked = useMarkRead(thread.data?.messages, onChanged);
  const action = useAction();
  const markUnread = (message: Message) =>
    void action.run(() => setRead(message, false)).then((done) => {
      if (!done) return;
      onChanged();
      navigate("inboxes", inboxId);
    });
  return (
    <>
      <Back to={href("inboxes", inboxId)} label="Threads" />
      <Loaded resource={thread} what="thread">
        {(data) => {
          const latest = data.messages[data.messages.length - 1];
          return (
            <>
              <header class="page-title">
                <h2>{data.subject || "(no subject)"}</h2>
                {latest ? (
                  <div class="actions">
                    <button type="button" disabled={action.busy} onClick={() => markUnread(latest)}>
                      Mark unread
                    </button>
                  </div>
                ) : null}
              </header>
              <ErrorNote message={action.error} />
              <p class="muted">
                {plural(data.messages.length, "message")}
                {latest ? ` · latest from ${nameAndAddress(latest.from, latest.fromName)}` : ""}
              </p>
              <ol class="thread">
                {data.messages.map((message) => (
                  <li key={message.id}>
                    {/* The newest and the ones unread on arrival start open; the older read ones as a line each. */}
                    <ThreadMessage message={message} startsOpen={message === latest || !message.read || marked.has(message.id)} />
                  </li>
                ))}
              </ol>
              {latest ? <ReplyForm message={latest} onSent={thread.reload} /> : null}
            </>
          );
        }}
      </Loaded>
    </>
  );
}
