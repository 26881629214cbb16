/**
 * One inbox's mail as a mail client shows it: its threads (newest activity first) with sender,
 * subject, preview, labels, attachment mark, unread state and date; on a wide screen the open
 * thread beside the list, on a narrow one instead of it. Or its messages with search. Both kept
 * live by the event stream.
 */
import { useState } from "preact/hooks";
import type { LiveEvent } from "../api/events";
import { v1 } from "../api/session";
import type { Inbox, MessageSummary, Thread } from "../api/types";
import { Badge, Empty, ErrorNote, Loaded, PageTitle, Pager, Time } from "../components/common";
import { plural } from "../lib/format";
import { submittedValues } from "../lib/forms";
import { useResource } from "../lib/resource";
import { href } from "../lib/router";
import { ThreadView } from "./thread";

const per = 25;
/** How often the lists look for new mail while the event stream is down. */
const mailPollMs = 2000;

const inboxPath = (inboxId: string) => `/inboxes/${encodeURIComponent(inboxId)}`;

/** A message of the inbox arrived, was sent, or changed status. */
const mailOf = (inboxId: string) => (event: LiveEvent) => event.inboxId === inboxId && event.event.startsWith("message.");

/** The inbox with its message and unread counts, which follow its mail. */
export function useInbox(inboxId: string) {
  return useResource(() => v1.get<Inbox>(inboxPath(inboxId)), [inboxId], { pollMs: mailPollMs, liveWhen: mailOf(inboxId) });
}

/** The sender as a list shows it: the display name when there is one, "me" for the inbox itself. */
const senderOf = (inbox: Inbox | undefined, from: string, fromName?: string) => (from === inbox?.email ? "me" : fromName || from);

/** A paper clip (drawn: an emoji needs a font the system may lack), with its meaning for screen readers. */
const AttachmentMark = ({ count }: { count: number }) =>
  count ? (
    <svg class="attachment-mark" viewBox="0 0 24 24" width="14" height="14" role="img" aria-label={plural(count, "attachment")}>
      <title>{plural(count, "attachment")}</title>
      <path d="M21.4 11.1l-9.2 9.2a6 6 0 0 1-8.5-8.5l9.2-9.2a4 4 0 0 1 5.7 5.7l-9.2 9.2a2 2 0 0 1-2.8-2.8l8.5-8.5" />
    </svg>
  ) : null;

const Labels = ({ labels }: { labels: string[] }) =>
  labels.length ? (
    <span class="labels">
      {labels.map((label) => (
        <span key={label} class="label">
          {label}
        </span>
      ))}
    </span>
  ) : null;

function ThreadItem({ thread, inbox, open }: { thread: Thread; inbox?: Inbox; open: boolean }) {
  const unread = thread.unreadCount > 0;
  return (
    <li class={`item mail-item${unread ? " unread" : ""}`}>
      <a class="main-link" href={href("inboxes", thread.inboxId, "threads", thread.id)} aria-current={open ? "true" : undefined} data-mail-item>
        <span class="mail-line">
          {unread ? <span class="unread-dot" role="img" aria-label="Unread" /> : null}
          <span class="sender">{senderOf(inbox, thread.from, thread.fromName)}</span>
          {thread.messageCount > 1 ? <span class="muted count">{thread.messageCount}</span> : null}
          <AttachmentMark count={thread.attachmentCount} />
          <Time iso={thread.lastMessageAt} />
        </span>
        <span class="mail-line">
          <strong class="subject">{thread.subject || "(no subject)"}</strong>
          <Labels labels={thread.labels} />
        </span>
        {thread.preview ? <span class="snippet">{thread.preview}</span> : null}
      </a>
    </li>
  );
}

function Threads({ inboxId, inbox, openThreadId, onChanged }: { inboxId: string; inbox?: Inbox; openThreadId?: string; onChanged(): void }) {
  const [page, setPage] = useState(1);
  const threads = useResource(() => v1.get<Thread[]>(`${inboxPath(inboxId)}/threads?page=${page}&per=${per}`), [inboxId, page], { pollMs: mailPollMs, liveWhen: mailOf(inboxId) });
  return (
    <div class={`panes${openThreadId ? " has-open" : ""}`}>
      <section class="pane-list" aria-label="Thread list">
        <Loaded resource={threads} what="threads">
          {(list) =>
            list.length ? (
              <ul class="list mail" aria-label="Threads">
                {list.map((thread) => (
                  <ThreadItem key={thread.id} thread={thread} inbox={inbox} open={thread.id === openThreadId} />
                ))}
              </ul>
            ) : (
              <Empty>No mail yet. New messages appear here by themselves.</Empty>
            )
          }
        </Loaded>
        <Pager page={page} per={per} count={threads.data?.length ?? 0} onPage={setPage} />
      </section>
      {openThreadId ? (
        <section class="pane-reader" aria-label="Open thread">
          <ThreadView
            inboxId={inboxId}
            threadId={openThreadId}
            onChanged={() => {
              threads.reload();
              onChanged();
            }}
          />
        </section>
      ) : (
        <p class="pane-reader pane-empty muted">Choose a thread to read it here (j and k move, Enter opens, ? lists every key).</p>
      )}
    </div>
  );
}

function MessageItem({ message, inbox }: { message: MessageSummary; inbox?: Inbox }) {
  const received = message.status === "received";
  return (
    <li class={`item mail-item${message.read ? "" : " unread"}`}>
      <a class="main-link" href={href("inboxes", message.inboxId, "messages", message.id)} data-mail-item>
        <span class="mail-line">
          {message.read ? null : <span class="unread-dot" role="img" aria-label="Unread" />}
          <span class="sender">{received ? senderOf(inbox, message.from, message.fromName) : `To ${message.to.join(", ")}`}</span>
          <Badge value={message.status} />
          <Time iso={message.createdAt} />
        </span>
        <span class="mail-line">
          <strong class="subject">{message.subject || "(no subject)"}</strong>
          <Labels labels={message.labels} />
        </span>
        {message.text ? <span class="snippet">{message.text.replace(/\s+/g, " ").slice(0, 200)}</span> : null}
      </a>
    </li>
  );
}

function Messages({ inboxId, inbox }: { inboxId: string; inbox?: Inbox }) {
  const [page, setPage] = useState(1);
  const [query, setQuery] = useState("");
  const search = query ? `&query=${encodeURIComponent(query)}` : "";
  const messages = useResource(() => v1.get<MessageSummary[]>(`${inboxPath(inboxId)}/messages?page=${page}&per=${per}${search}`), [inboxId, page, query], {
    pollMs: mailPollMs,
    liveWhen: mailOf(inboxId),
  });
  const submit = (event: SubmitEvent) => {
    setQuery(submittedValues(event).query?.trim() ?? "");
    setPage(1);
  };
  return (
    <>
      <form class="search" role="search" onSubmit={submit}>
        <label for="mail-search">Search subject, text and sender</label>
        <div class="row">
          <input id="mail-search" name="query" type="search" defaultValue={query} placeholder="a word or phrase, or /regex/i" />
          <button type="submit">Search</button>
        </div>
      </form>
      <Loaded resource={messages} what="messages">
        {(list) =>
          list.length ? (
            <ul class="list mail" aria-label={query ? `Messages matching ${query}` : "Messages"}>
              {list.map((message) => (
                <MessageItem key={message.id} message={message} inbox={inbox} />
              ))}
            </ul>
          ) : (
            <Empty>{query ? "No message matches." : "No mail yet. New messages appear here by themselves."}</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={messages.data?.length ?? 0} onPage={setPage} />
    </>
  );
}

export function Mailbox({ inboxId, tab, threadId }: { inboxId: string; tab: "threads" | "messages"; threadId?: string }) {
  const inbox = useInbox(inboxId);
  const unread = inbox.data?.unreadCount;
  return (
    <>
      <PageTitle title={inbox.data?.name || inbox.data?.email || "Inbox"}>
        <a class="button primary" href={href("inboxes", inboxId, "compose")} aria-keyshortcuts="c">
          Compose
        </a>
      </PageTitle>
      <p class="muted mailbox-summary">
        {inbox.data?.name ? `${inbox.data.email} · ` : ""}
        {inbox.data?.messageCount === undefined ? null : `${plural(inbox.data.messageCount, "message")}${unread ? `, ${unread} unread` : ""}`}
      </p>
      <nav class="tabs" aria-label="Mail views">
        <a href={href("inboxes", inboxId)} aria-current={tab === "threads" ? "page" : undefined}>
          Threads
        </a>
        <a href={href("inboxes", inboxId, "messages")} aria-current={tab === "messages" ? "page" : undefined}>
          Messages
        </a>
      </nav>
      {inbox.error ? <ErrorNote message={inbox.error} /> : tab === "threads" ? <Threads inboxId={inboxId} inbox={inbox.data} openThreadId={threadId} onChanged={inbox.reload} /> : <Messages inboxId={inboxId} inbox={inbox.data} />}
    </>
  );
}
